"""The two ways to add a stream on Settings → Audit streaming."""

from typing import Any

from django import forms

from apps.audit.actions import action_choices

from .services import MAX_HEADERS

EVENTS_HELP = "Leave all unticked to stream every event, those of actions added later included."


class StreamForm(forms.Form):
    name = forms.CharField(max_length=100, widget=forms.TextInput(attrs={"autocomplete": "off"}))
    events = forms.MultipleChoiceField(
        label="Only these events", required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        events = self.fields["events"]
        assert isinstance(events, forms.MultipleChoiceField)
        events.choices = [(code, f"{label} · {code}") for code, label in action_choices()]
        events.help_text = EVENTS_HELP


class HttpsStreamForm(StreamForm):
    url = forms.CharField(
        label="URL",
        max_length=2000,
        help_text="An https:// address that answers 2xx within 10 seconds; redirects are not "
        "followed.",
        widget=forms.URLInput(attrs={"placeholder": "https://siem.example.com/ingest"}),
    )
    headers = forms.CharField(
        label="Custom headers",
        required=False,
        widget=forms.Textarea(
            attrs={
                "rows": 3,
                "placeholder": "Authorization: Splunk 0000-1111",
                "spellcheck": "false",
            }
        ),
        help_text=f"One a line, <code>Name: value</code>; up to {MAX_HEADERS}. Values are stored "
        "encrypted and never shown again.",
    )
    field_order = ["name", "url", "headers", "events"]

    def clean_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for line in self.cleaned_data["headers"].splitlines():
            if not line.strip():
                continue
            name, colon, value = line.partition(":")
            if not colon:
                raise forms.ValidationError(f"Write each header as Name: value ({line.strip()!r}).")
            headers[name.strip()] = value.strip()
        return headers


class SyslogStreamForm(StreamForm):
    host = forms.CharField(
        max_length=253, widget=forms.TextInput(attrs={"placeholder": "syslog.example.com"})
    )
    port = forms.IntegerField(min_value=1, max_value=65535, initial=6514)
    ca_certificate = forms.CharField(
        label="CA certificate (PEM)",
        widget=forms.Textarea(
            attrs={"rows": 4, "placeholder": "-----BEGIN CERTIFICATE-----", "spellcheck": "false"}
        ),
        help_text="The server's certificate must chain to it and name the host. RFC 5424 over "
        "TLS, framed by octet counting (RFC 6587).",
    )
    field_order = ["name", "host", "port", "ca_certificate", "events"]
