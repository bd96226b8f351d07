# SecretScanningKeySet now belongs to the leaks app, which keeps this app's table.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("api_keys", "0012_approvals"),
        ("leaks", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="SecretScanningKeySet")],
            database_operations=[],
        ),
    ]
