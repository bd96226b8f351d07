"""Counts in words, without the template machinery (the key's core imports none)."""


def pluralize(count: object, forms: str = "s") -> str:
    """Django's `|pluralize`: the suffix after a count ("" for one, "s" else), or with
    "singular,plural" the form for `count` ("waits,wait")."""
    singular, _, plural = forms.rpartition(",") if "," in forms else ("", "", forms)
    return singular if count == 1 else plural
