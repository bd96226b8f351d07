"""A form field for a day, typed as the pages write one ("Nov 26, 2026", or 2026-11-26): the
browser's own date input would show its locale's "mm/dd/yyyy" beside our "Nov 26, 2026"."""

from datetime import date
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from .dates import day_text, parse_day_text


class DayInput(forms.TextInput):
    def format_value(self, value: Any) -> str | None:
        return day_text(value) if isinstance(value, date) else super().format_value(value)


class DayField(forms.DateField):
    widget = DayInput

    def to_python(self, value: Any) -> date | None:
        if value in self.empty_values:
            return None
        if isinstance(value, date):
            return value
        day = parse_day_text(str(value).strip())
        if day is None:
            raise ValidationError("Write the date as Nov 26, 2026 (or 2026-11-26).", code="invalid")
        return day
