"""Power saving in the admin, read-only: each run of a power program is a record, and the
power-save state changes only through power.services (scontrol power / update, reconfigure)."""

from __future__ import annotations

from django.contrib import admin

from cluster.record_admin import RecordAdmin
from power.models import PowerRun, PowerState


@admin.register(PowerRun)
class PowerRunAdmin(RecordAdmin):
    list_display = ["started", "kind", "program", "nodes", "host", "exit_code", "failure"]
    list_filter = ["kind"]


@admin.register(PowerState)
class PowerStateAdmin(RecordAdmin):
    list_display = ["__str__", "config_version", "auto_enabled", "last_run"]
