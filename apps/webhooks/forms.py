from django import forms

from apps.common.validation import InvalidInput

from .destinations import clean_url
from .events import EVENT_TYPES


class EndpointForm(forms.Form):
    url = forms.CharField(
        label="URL",
        max_length=2000,
        help_text="An https:// address that answers 2xx within 10 seconds. Redirects are not "
        "followed.",
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/webhooks/gatehouse"}),
    )
    description = forms.CharField(max_length=200, required=False)
    event_types = forms.MultipleChoiceField(
        label="Events",
        choices=[(code, f"{code} · {label}") for code, label in EVENT_TYPES.items()],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one event type."},
    )

    def clean_url(self) -> str:
        try:
            return clean_url(self.cleaned_data["url"])
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message) from exc


class EndpointEditForm(EndpointForm):
    enabled = forms.BooleanField(
        required=False, help_text="A disabled endpoint receives nothing but test events."
    )
