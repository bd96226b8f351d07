"""The development mailbox: every e-mail the file backend wrote to EMAIL_FILE_PATH, newest
first, links clickable. Only with DEBUG on (a 404 otherwise), so a newcomer finds the
verification link, the invitation or the expiry notice without reading the server log."""

import email
import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import default
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

SEPARATOR = "-" * 79  # what Django's file backend writes after each message
LINK = re.compile(r"https?://[^\s<>\"']+")
SHOWN = 50


@dataclass(frozen=True)
class DevMail:
    subject: str
    to: str
    sent: str
    body: SafeString


def _body_html(message: EmailMessage) -> SafeString:
    part = message.get_body(preferencelist=("plain",)) if message.is_multipart() else message
    text = part.get_content() if part is not None else ""
    linked = LINK.sub(lambda m: f'<a href="{m.group(0)}">{m.group(0)}</a>', escape(text))
    return mark_safe(linked)  # noqa: S308 - escaped above, links built from the escaped text


def sent_mail(folder: Path) -> list[DevMail]:
    """The messages in `folder`, newest file first."""
    mails: list[DevMail] = []
    files = sorted(folder.glob("*.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in files:
        chunks = [c for c in path.read_text(errors="replace").split(SEPARATOR) if c.strip()]
        for chunk in reversed(chunks):
            # As bytes: parsed from a str, an 8-bit body's non-ASCII characters would come
            # back as "\u201c" escapes.
            message = email.message_from_bytes(chunk.strip("\n").encode(), policy=default)
            assert isinstance(message, EmailMessage)  # what the default policy makes
            mails.append(
                DevMail(
                    subject=str(message.get("Subject", "")),
                    to=str(message.get("To", "")),
                    sent=str(message.get("Date", "")),
                    body=_body_html(message),
                )
            )
        if len(mails) >= SHOWN:
            break
    return mails[:SHOWN]


def development(request: HttpRequest) -> dict[str, bool]:
    """Context processor: whether pages may point at the development mailbox."""
    return {"debug_mailbox": settings.DEBUG}


def dev_mailbox(request: HttpRequest) -> HttpResponse:
    if not settings.DEBUG:
        raise Http404("The development mailbox exists only with DEBUG on.")
    folder = Path(settings.EMAIL_FILE_PATH)
    mails = sent_mail(folder) if folder.is_dir() else []
    return render(request, "devmail/inbox.html", {"mails": mails, "folder": folder})
