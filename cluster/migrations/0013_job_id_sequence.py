"""PostgreSQL takes job ids from a sequence, which no transaction locks (cluster.services.jobs).

It starts after every id already given: the counter row's next id, or above the largest
job id. SQLite keeps the counter row. Going back copies the sequence's next id into it.
"""

from django.db import migrations

SEQUENCE = "cluster_job_ids"


def create_sequence(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    counter = apps.get_model("cluster", "JobIdCounter").objects.filter(pk=1).first()
    largest = apps.get_model("cluster", "Job").objects.order_by("-id").values_list("id", flat=True).first()
    start = max(counter.next_id if counter else 1, (largest or 0) + 1, 1)
    schema_editor.execute(f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE} AS bigint MINVALUE 1")
    schema_editor.execute(f"SELECT setval('{SEQUENCE}', %s, false)", [start])


def drop_sequence(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM {SEQUENCE}")
        (next_id,) = cursor.fetchone()
    apps.get_model("cluster", "JobIdCounter").objects.update_or_create(pk=1, defaults={"next_id": next_id})
    schema_editor.execute(f"DROP SEQUENCE {SEQUENCE}")


class Migration(migrations.Migration):
    dependencies = [
        ("cluster", "0012_symbols_reboot"),
    ]

    operations = [migrations.RunPython(create_sequence, drop_sequence)]
