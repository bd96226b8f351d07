"""E-mail sent by a worker, not in the request that caused it (leak reports, expiry notices,
endpoints disabled). Enqueued in the transaction of its cause, so a change rolled back sends
nothing."""

from django.core.mail import send_mail
from django_tasks import task


@task()
def send_email(subject: str, body: str, recipients: list[str]) -> int:
    return send_mail(subject, body, None, recipients)
