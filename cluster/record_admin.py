"""Read-only admin pages for what is a record: the audit trail (Events, django-auditlog's
and the admin's own log entries), the configuration in force and run histories.

A record is shown, never added, changed or deleted from the admin, superusers included:
the audit trail would otherwise be editable by the people it audits.  Old records go with
``manage.py fsched_purge`` (docs/audit.md), which records that it ran.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class RecordAdmin(admin.ModelAdmin):
    """Shown only: no add, change or delete (so no "delete selected" action either)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
