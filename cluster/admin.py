"""Admin pages.  Edits that change cluster behaviour go through the services; records
(events, log entries, the configuration in force) are read-only (cluster.record_admin).

Nodes and partitions are defined by slurm.conf and change through ``scontrol reconfigure``;
the admin edits only what ``scontrol update NodeName=`` may change (weight, features,
reason), through :func:`cluster.services.nodes.node_update`.
"""

from __future__ import annotations

import json
from typing import Any

from auditlog import get_logentry_model
from auditlog.admin import LogEntryAdmin as AuditlogEntryAdmin
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry as AdminLogEntry
from django.db import transaction
from django.http import HttpRequest
from django.utils.html import format_html

from cluster.models import ClusterConfig, Event, Job, Node, Partition
from cluster.record_admin import RecordAdmin
from cluster.services import jobs as job_services
from cluster.services import nodes as node_services
from cluster.services.errors import ServiceError

# fsched's names in the admin's header and titles, not Django's ("Django administration").
admin.site.site_header = "fsched administration"
admin.site.site_title = "fsched admin"
admin.site.index_title = "Cluster administration"

_NODE_EDITABLE = ("weight", "features", "reason")


class NodeForm(forms.ModelForm):
    """Applies the change through node_update while validating, in a savepoint: a
    refusal shows on the form and changes nothing."""

    actor: Any = None

    class Meta:
        model = Node
        fields = list(_NODE_EDITABLE)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        changes = {k: data.get(k) for k in _NODE_EDITABLE if k in self.changed_data}
        if self.errors or not changes:
            return data
        try:
            with transaction.atomic():
                node_services.node_update(actor=self.actor, nodes=self.instance.name, **changes)
        except ServiceError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "state", "cpus", "alloc_cpus", "real_memory", "weight", "reason", "last_contact"]
    search_fields = ["name", "features", "reason"]
    form = NodeForm
    readonly_fields = [f.name for f in Node._meta.fields if f.name not in (*_NODE_EDITABLE, "id")]
    actions = ["drain", "resume"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        form.actor = request.user
        return form

    @admin.action(description="Drain selected nodes (reason: 'drained from the admin')")
    def drain(self, request: HttpRequest, queryset):
        self._update(request, queryset, "DRAIN", "drained from the admin")

    @admin.action(description="Resume selected nodes")
    def resume(self, request: HttpRequest, queryset):
        self._update(request, queryset, "RESUME", None)

    def _update(self, request, queryset, state, reason):
        names = ",".join(queryset.values_list("name", flat=True))
        try:
            node_services.node_update(actor=request.user, nodes=names, state=state, reason=reason)
        except ServiceError as exc:
            self.message_user(request, str(exc), messages.ERROR)

    def save_model(self, request, obj, form, change):
        pass  # NodeForm.clean saved it through the service

    def has_add_permission(self, request):
        return False  # slurm.conf and reconfigure, or scontrol create NodeName= (dynamic)

    def has_delete_permission(self, request, obj=None):
        return False  # reconfigure, or scontrol delete NodeName= (dynamic)


@admin.register(Partition)
class PartitionAdmin(RecordAdmin):
    """Partitions come from slurm.conf: a raw edit here would skip its validation."""

    list_display = ["name", "nodes", "is_default", "state", "max_time", "priority_tier"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "user", "partition", "state", "reason", "node_list", "submit_time"]
    list_filter = ["state", "partition"]
    search_fields = ["id", "name", "user"]
    actions = ["cancel", "hold", "release"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Job._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # a job's row is its accounting record (sacct)

    def _each(self, request, queryset, func):
        for job in queryset:
            try:
                func(actor=request.user, job_id=job.id)
            except ServiceError as exc:
                self.message_user(request, f"job {job.id}: {exc}", messages.ERROR)

    @admin.action(description="Cancel selected jobs")
    def cancel(self, request, queryset):
        self._each(request, queryset, job_services.job_cancel)

    @admin.action(description="Hold selected jobs")
    def hold(self, request, queryset):
        self._each(request, queryset, job_services.job_hold)

    @admin.action(description="Release selected jobs")
    def release(self, request, queryset):
        self._each(request, queryset, job_services.job_release)


@admin.register(Event)
class EventAdmin(RecordAdmin):
    list_display = ["time", "kind", "job_id", "node", "old_state", "new_state", "reason", "user"]
    list_filter = ["kind"]


@admin.register(ClusterConfig)
class ClusterConfigAdmin(RecordAdmin):
    """The configuration in force, shown; it changes only by ``scontrol reconfigure``."""

    list_display = ["cluster_name", "version", "loaded_at"]
    fields = ["cluster_name", "version", "loaded_at", "files_shown", "options_shown", "licenses_shown"]
    readonly_fields = fields

    @admin.display(description="files")
    def files_shown(self, obj: ClusterConfig) -> str:
        return format_html("<pre>{}</pre>", "\n".join(obj.files))

    @admin.display(description="options")
    def options_shown(self, obj: ClusterConfig) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.options, indent=1, sort_keys=True))

    @admin.display(description="licenses")
    def licenses_shown(self, obj: ClusterConfig) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.licenses, indent=1, sort_keys=True))


class AuditLogEntryAdmin(AuditlogEntryAdmin):
    """auditlog's page, without the deletions it allows when another object is deleted."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AdminLogEntry)
class AdminLogEntryAdmin(RecordAdmin):
    """The admin's own history.  Registered so that deleting a user in the admin, which
    would cascade to their entries, is refused ("permission to delete ... log entry")."""

    list_display = ["action_time", "user", "content_type", "object_repr", "action_flag", "change_message"]
    list_filter = ["action_flag", "content_type"]


admin.site.unregister(get_logentry_model())
admin.site.register(get_logentry_model(), AuditLogEntryAdmin)
