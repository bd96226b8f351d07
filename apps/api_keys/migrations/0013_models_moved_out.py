# SecretScanningKeySet now belongs to the leaks app and ExpiryNotice to key_expiry; both keep
# this app's tables.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("api_keys", "0012_approvals"),
        ("leaks", "0001_initial"),
        ("key_expiry", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="SecretScanningKeySet"),
                migrations.DeleteModel(name="ExpiryNotice"),
            ],
            database_operations=[],
        ),
    ]
