# The model moved here from api_keys with its table: the table is api_keys' (made by its
# migration 0006), so this only takes it into this app's state.

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("api_keys", "0006_secret_scanning_key_set"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SecretScanningKeySet",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("body", models.TextField()),
                        ("fetched_at", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={"db_table": "api_keys_secretscanningkeyset"},
                ),
            ],
            database_operations=[],
        ),
    ]
