"""Accounts made before e-mail verification existed keep working: their address, which they
have been signing in with, is recorded as their verified primary address (allauth's table)."""

from django.db import migrations


def verify_existing_addresses(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    EmailAddress = apps.get_model("account", "EmailAddress")
    known = set(EmailAddress.objects.values_list("user_id", flat=True))
    EmailAddress.objects.bulk_create(
        EmailAddress(user_id=user.pk, email=user.email, primary=True, verified=True)
        for user in User.objects.exclude(pk__in=known).only("pk", "email")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("account", "0009_emailaddress_unique_primary_email"),
    ]

    operations = [migrations.RunPython(verify_existing_addresses, migrations.RunPython.noop)]
