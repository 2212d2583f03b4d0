"""Drop the plain-text tokens of ``rest_framework.authtoken`` (replaced by ApiToken digests).

They cannot be carried over: a digest of each would still leave the old key working for
whoever read it from the database, which is the exposure this removes.  Users log in again
(``fsched login``; ``make run`` writes a new token itself).
"""

from django.db import migrations

OLD_TABLE = "authtoken_token"


def drop_plain_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            # Overwrite the freed pages, so the keys do not survive in the file either.
            cursor.execute("PRAGMA secure_delete = ON")
        cursor.execute(f"DELETE FROM {OLD_TABLE}")  # noqa: S608 - a constant
        cursor.execute(f"DROP TABLE {OLD_TABLE}")
        cursor.execute("DELETE FROM django_migrations WHERE app = %s", ["authtoken"])


class Migration(migrations.Migration):
    dependencies = [("cluster", "0006_api_tokens_and_submit_keys")]

    operations = [migrations.RunPython(drop_plain_tokens, migrations.RunPython.noop)]
