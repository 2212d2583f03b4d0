"""Slurm's defaults: the ``normal`` QOS, the ``root`` account and the default TRES."""

from __future__ import annotations

from django.db import migrations

DEFAULT_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages")


def forwards(apps, schema_editor):
    apps.get_model("limits", "QOS").objects.get_or_create(
        name="normal", defaults={"description": "Normal QOS default"}
    )
    apps.get_model("limits", "Account").objects.get_or_create(
        name="root", defaults={"description": "default root account", "organization": "root"}
    )
    tres = apps.get_model("limits", "Tres")
    for name in DEFAULT_TRES:
        tres.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [("limits", "0001_initial")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
