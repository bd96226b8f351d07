from datetime import date, datetime, time, timedelta
from typing import Any, cast
from zoneinfo import ZoneInfo

from django import forms
from django.http import QueryDict
from django.utils import timezone

from apps.api.scopes import ALL_SCOPES, GROUPS, KEY_SCOPES, MEMBER_SCOPES
from apps.api_keys.policy import (
    DESCRIPTION_MAX_LENGTH,
    EXPIRY_DAY_CHOICES,
    MAX_LIFETIME,
    clean_description,
)
from apps.common.day_fields import DayField, DayInput
from apps.common.quota_periods import REQUESTS_MAX, REQUESTS_MIN, Quota
from apps.common.validation import InvalidInput, clean_text
from apps.common.wording import pluralize

# What each resource's permission allows, in the words of the create form.
GROUP_DESCRIPTIONS = {
    "products": ("the products the workspace sells", "list them", "create products"),
    "communities": ("communities and their posts", "list them and read posts", "write posts"),
    "pages": ("hosted pages", "list them", "create pages"),
    "keys": (
        "the workspace's API keys, over the API",
        "list them and see their use",
        "create, roll, narrow and revoke them",
    ),
}
GROUP_LABELS = {"keys": "API keys"}
# Read and/or Write (docs/product.md §4): "write" is Read & write, "write_only" Write alone.
ACCESS_CHOICES = [
    ("none", "None"),
    ("read", "Read"),
    ("write_only", "Write"),
    ("write", "Read & write"),
]
ACCESS_SCOPES = {
    "none": (),
    "read": ("read",),
    "write_only": ("write",),
    "write": ("read", "write"),
}


def asked_scope_rows(asked: list[str], chosen: list[str]) -> list[dict[str, Any]]:
    """The Read/Write matrix of a sign-in's approval (`/device`, the OAuth consent page):
    a box for each scope the client asked for, ticked if chosen; groups it asked nothing of
    are left out (`_scope_matrix.html`)."""
    return [
        {
            "label": "API keys" if group == "keys" else group.capitalize(),
            "boxes": [
                {
                    "scope": f"{group}:{action}",
                    "label": action.capitalize(),
                    "asked": f"{group}:{action}" in asked,
                    "checked": f"{group}:{action}" in chosen,
                }
                for action in ("read", "write")
            ],
        }
        for group in (*GROUPS, "keys")
        if any(scope.startswith(group + ":") for scope in asked)
    ]


EXPIRY_CHOICES = [
    *[(str(days), f"{days} days") for days in EXPIRY_DAY_CHOICES],
    ("custom", "Custom date"),
    ("never", "No expiry"),
]


class ApiKeyCreateForm(forms.Form):
    """Name, expiry and the Read / Write matrix of a new key; `expires_at()` turns the expiry
    choice into a moment, with a custom date meaning the end of that day in `tz_name`."""

    name = forms.CharField(
        max_length=100,
        help_text="What the key is for, e.g. “Zapier sync”.",
        error_messages={"required": "Give the key a name, e.g. “Zapier sync”."},
        widget=forms.TextInput(attrs={"autofocus": True, "autocomplete": "off"}),
    )
    description = forms.CharField(
        max_length=DESCRIPTION_MAX_LENGTH,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Optional: where it is used and who to ask, up to 500 characters.",
    )
    expiry = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="365", widget=forms.RadioSelect)
    custom_date = DayField(
        required=False, label="Expiry date", widget=DayInput(attrs={"autocomplete": "off"})
    )
    # Either the six scopes (tests, the re-create link) or one None / Read / Read & write choice
    # per resource (`access_<group>`, the form's own controls).
    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in ALL_SCOPES], widget=forms.CheckboxSelectMultiple, required=False
    )
    quota_requests = forms.IntegerField(
        required=False,
        min_value=REQUESTS_MIN,
        max_value=REQUESTS_MAX,
        label="Quota",
        help_text="Optional: at most this many answered requests a period, counted from the "
        "key's creation; empty for none.",
        error_messages={
            "min_value": "A quota allows at least 1 request.",
            "max_value": "A quota allows at most 1,000,000,000 requests.",
            "invalid": "The quota must be a whole number of requests.",
        },
        widget=forms.NumberInput(attrs={"inputmode": "numeric", "placeholder": "e.g. 10000"}),
    )
    quota_period = forms.ChoiceField(
        choices=[("day", "a day"), ("week", "a week"), ("month", "a month"), ("never", "once")],
        initial="month",
        required=False,
        label="Quota period",
    )
    form_token = forms.CharField(widget=forms.HiddenInput)

    def quota(self) -> Quota | None:
        """The quota asked for, or None (call after is_valid)."""
        requests = self.cleaned_data.get("quota_requests")
        if not requests:
            return None
        return Quota(requests, self.cleaned_data.get("quota_period") or "month")

    def __init__(
        self,
        *args: Any,
        tz_name: str = "UTC",
        member: bool = False,
        max_days: int = 365,
        allow_no_expiry: bool = True,
        key_manager: bool = False,
        **kwargs: Any,
    ) -> None:
        if member and not (kwargs.get("data") or (args[0] if args else None)):
            # A member key has one group: it starts at Read rather than at a refusal.
            kwargs.setdefault("initial", {}).setdefault("access_communities", "read")
        super().__init__(*args, **kwargs)
        self.tz = ZoneInfo(tz_name)
        self.max_days = max_days
        # The workspace's key policy decides which lifetimes are offered.
        self._choice_field("expiry").choices = [
            (value, label)
            for value, label in EXPIRY_CHOICES
            if (value.isdigit() and int(value) <= max_days)
            or value == "custom"
            or (value == "never" and allow_no_expiry)
        ]
        # Owners and admins may also give a key the keys scopes (docs/product.md §2).
        self.groups = ("communities",) if member else (*GROUPS, "keys") if key_manager else GROUPS
        allowed = MEMBER_SCOPES if member else ALL_SCOPES + (KEY_SCOPES if key_manager else ())
        self.allowed_scopes = allowed
        self._choice_field("scopes").choices = [(s, s) for s in allowed]
        for group in self.groups:
            self.fields[f"access_{group}"] = forms.ChoiceField(
                choices=ACCESS_CHOICES, required=False, widget=forms.RadioSelect
            )
        today = timezone.localdate(timezone=self.tz)
        # The days a custom expiry may fall on, said beside its field.
        self.first_day = today + timedelta(days=1)
        self.last_day = today + min(MAX_LIFETIME, timedelta(days=max_days))

    def _chosen_scopes(self) -> set[str]:
        """The scopes the submitted (or initial) choices stand for."""
        source = self.data if self.is_bound else self.initial
        if any(f"access_{group}" in source for group in self.groups):
            chosen = set()
            for group in self.groups:
                access = source.get(f"access_{group}", "none")
                chosen |= {f"{group}:{action}" for action in ACCESS_SCOPES.get(access, ())}
            return chosen
        return set(self["scopes"].value() or [])

    def permission_rows(self) -> list[dict[str, Any]]:
        """One row per resource: its None / Read / Write / Read & write choice and what each
        allows; a key being re-created gets exactly the choices it had."""
        chosen = self._chosen_scopes()
        rows = []
        for group in self.groups:
            what, read, write = GROUP_DESCRIPTIONS[group]
            held = tuple(a for a in ("read", "write") if f"{group}:{a}" in chosen)
            current = next(value for value, scopes in ACCESS_SCOPES.items() if scopes == held)
            rows.append(
                {
                    "group": group,
                    "label": GROUP_LABELS.get(group, group.capitalize()),
                    "what": what,
                    "read": read,
                    "write": write,
                    "choices": [
                        {"value": value, "label": label, "checked": value == current}
                        for value, label in ACCESS_CHOICES
                    ],
                }
            )
        return rows

    def apply_preset(self, preset: str) -> None:
        """The "Read: all resources" and "Read & write: all resources" shortcuts, for browsers
        without JavaScript.
        They cover the resources; managing keys is never part of a shortcut."""
        data = cast(QueryDict, self.data).copy()
        for group in self.groups:
            if group == "keys":
                continue
            data[f"access_{group}"] = {"read": "read", "full": "write"}.get(preset, "none")
        self.data = data

    def expiry_options(self) -> list[dict[str, Any]]:
        """The expiry radios, each with the date it ends on in the workspace's time zone."""
        now = timezone.localtime(timezone.now(), self.tz)
        options = []
        for radio in self["expiry"]:
            value = radio.data["value"]
            until = now + timedelta(days=int(value)) if value.isdigit() else None
            options.append({"radio": radio, "value": value, "until": until})
        return options

    def clean_name(self) -> str:
        try:
            return clean_text(self.cleaned_data["name"], "Name", max_length=100)
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None

    def clean_description(self) -> str:
        try:
            return clean_description(self.cleaned_data["description"])
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None

    def _choice_field(self, name: str) -> forms.ChoiceField:
        return cast(forms.ChoiceField, self.fields[name])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        allowed = set(self.allowed_scopes)
        data["scopes"] = sorted(self._chosen_scopes() & allowed)
        if not data["scopes"]:
            # Beside the permissions, where the choice is made, in the choices' own words.
            self.add_error(
                "scopes",
                "Choose a permission: Read, Write or Read & write on at least one resource."
                if len(self.groups) > 1
                else "Choose a permission: Read, Write or Read & write.",
            )
        if data.get("expiry") == "custom":
            chosen: date | None = data.get("custom_date")
            today = timezone.localdate(timezone=self.tz)
            if chosen is None:
                if not self.has_error("custom_date"):  # a date it could not read says so
                    self.add_error("custom_date", "Pick the date the key should expire.")
            elif chosen <= today:
                self.add_error("custom_date", "The expiry date must be in the future.")
            elif chosen > today + min(MAX_LIFETIME, timedelta(days=self.max_days)):
                self.add_error(
                    "custom_date",
                    "The expiry date can be at most "
                    f"{self.max_days} day{pluralize(self.max_days)} ahead "
                    "(this workspace's key policy)."
                    if self.max_days < 365
                    else "The expiry date can be at most 365 days ahead.",
                )
        return data

    def expires_at(self) -> datetime | None:
        expiry = self.cleaned_data["expiry"]
        if expiry == "never":
            return None
        if expiry == "custom":
            end_of_day = datetime.combine(self.cleaned_data["custom_date"], time.max, self.tz)
            return min(end_of_day, timezone.now() + MAX_LIFETIME)
        return timezone.now() + timedelta(days=int(expiry))
