"""The cycles in the admin: one row each, its interval and state editable, where its
default comes from and how its last run went shown beside them.  django-celery-beat's own
pages (Periodic tasks, Intervals) stay registered and edit the same rows."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django_celery_beat.admin import PeriodicTaskAdmin as BeatPeriodicTaskAdmin
from django_celery_beat.models import PeriodicTask

from cycles import rows
from cycles.models import CycleStatus

# Below this a cycle would keep a core busy; Slurm's own intervals are whole seconds.
MIN_SECONDS = 0.05


class CycleForm(forms.ModelForm):
    interval = forms.FloatField(
        min_value=MIN_SECONDS,
        help_text="Seconds between two runs. Saved, it is in force within seconds, without a restart.",
    )
    enabled = forms.BooleanField(
        required=False,
        help_text="Off: no periodic runs (the passes that submissions and completions ask for still run).",
    )

    class Meta:
        model = CycleStatus
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        task = self.instance.task
        self.initial.setdefault("interval", rows.interval_seconds(task.interval))
        self.initial.setdefault("enabled", task.enabled)


@admin.register(CycleStatus)
class CycleAdmin(admin.ModelAdmin):
    form = CycleForm
    list_display = (
        "name",
        "interval",
        "enabled",
        "source",
        "default",
        "last_run",
        "last_duration",
        "last_result",
    )
    fields = (*list_display, "description")
    readonly_fields = ("name", "source", "default", "last_run", "last_duration", "last_result", "description")
    actions = ("reset_to_default",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[CycleStatus]:
        return super().get_queryset(request).select_related("task__interval")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # one row per cycle, made by fsched

    def has_delete_permission(self, request: HttpRequest, obj: CycleStatus | None = None) -> bool:
        return False

    @admin.display(ordering="task__name")
    def name(self, obj: CycleStatus) -> str:
        return obj.task.name

    @admin.display(description="interval (s)")
    def interval(self, obj: CycleStatus) -> float:
        return rows.interval_seconds(obj.task.interval)

    @admin.display(boolean=True)
    def enabled(self, obj: CycleStatus) -> bool:
        return obj.task.enabled

    @admin.display(description="interval from")
    def source(self, obj: CycleStatus) -> str:
        return rows.source(obj)

    @admin.display(description="default (s)")
    def default(self, obj: CycleStatus) -> str:
        return f"{obj.default_seconds:g}" + ("" if obj.default_enabled else ", disabled")

    def description(self, obj: CycleStatus) -> str:
        return obj.task.description

    def save_model(self, request: HttpRequest, obj: CycleStatus, form: forms.Form, change: bool) -> None:
        rows.cycle_update(
            status=obj, seconds=form.cleaned_data["interval"], enabled=form.cleaned_data["enabled"]
        )

    @admin.action(description="Reset to the default (slurm.conf, environment or fsched's)")
    def reset_to_default(self, request: HttpRequest, queryset: QuerySet[CycleStatus]) -> None:
        for status in queryset:
            rows.cycle_reset(status=status)
        self.message_user(request, f"{len(queryset)} cycle(s) reset to their defaults.", messages.SUCCESS)


admin.site.unregister(PeriodicTask)


@admin.register(PeriodicTask)
class PeriodicTaskAdmin(BeatPeriodicTaskAdmin):
    """django-celery-beat's page, whose bulk actions save each row instead of one UPDATE, so
    that enabling or disabling a cycle there is audited like an edit."""

    def _set_enabled(self, request: HttpRequest, queryset: QuerySet[PeriodicTask], how: str) -> None:
        with transaction.atomic():
            tasks = list(queryset.select_for_update(of=("self",)))
            for task in tasks:
                task.enabled = {"enable": True, "disable": False}.get(how, not task.enabled)
                task.save()  # bumps beat's change marker, and auditlog sees it
        self.message_user(request, f"{len(tasks)} task(s) {how}d.", messages.SUCCESS)

    @admin.action(description="Enable selected tasks")
    def enable_tasks(self, request: HttpRequest, queryset: QuerySet[PeriodicTask]) -> None:
        self._set_enabled(request, queryset, "enable")

    @admin.action(description="Disable selected tasks")
    def disable_tasks(self, request: HttpRequest, queryset: QuerySet[PeriodicTask]) -> None:
        self._set_enabled(request, queryset, "disable")

    @admin.action(description="Toggle activity of selected tasks")
    def toggle_tasks(self, request: HttpRequest, queryset: QuerySet[PeriodicTask]) -> None:
        self._set_enabled(request, queryset, "toggle")
