from django import forms

from apps.common.validation import InvalidInput, clean_text


class CommunityForm(forms.Form):
    name = forms.CharField(max_length=100, label="Community name")

    def clean_name(self) -> str:
        try:
            return clean_text(self.cleaned_data["name"], "Name", max_length=100)
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None


class AddMemberForm(forms.Form):
    email = forms.EmailField(label="E-mail address")
