# The model moved here from api_keys with its table: the table is api_keys' (made by its
# migrations 0002 and 0010), so this only takes it into this app's state.

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("api_keys", "0010_alter_expirynotice_kind"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ExpiryNotice",
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
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("7d", "7 days before"),
                                    ("1d", "1 day before"),
                                    ("0d", "Expired"),
                                ],
                                max_length=2,
                            ),
                        ),
                        ("sent_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "key",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="expiry_notices",
                                to="api_keys.apikey",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "api_keys_expirynotice",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("key", "kind"), name="one_notice_per_kind"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
