"""Admin pages.  Edits that change cluster behaviour go through the services."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest

from cluster.models import ClusterConfig, Event, Job, Node, Partition
from cluster.services import jobs as job_services
from cluster.services import nodes as node_services
from cluster.services.errors import ServiceError


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "state", "cpus", "alloc_cpus", "real_memory", "weight", "reason", "last_contact"]
    search_fields = ["name", "features", "reason"]
    readonly_fields = [
        "base_state",
        "flags",
        "alloc_cpus",
        "alloc_mem",
        "reported_cpus",
        "reported_memory",
        "boot_time",
        "last_contact",
        "agent_id",
        "reason_user",
        "reason_time",
    ]
    actions = ["drain", "resume"]

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
        if not change:
            raise ServiceError("Nodes are defined in slurm.conf; add them there and reconfigure")
        node_services.node_update(
            actor=request.user,
            nodes=obj.name,
            weight=obj.weight,
            features=obj.features,
            reason=obj.reason or None,
        )

    def has_add_permission(self, request):
        return False


@admin.register(Partition)
class PartitionAdmin(admin.ModelAdmin):
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
class EventAdmin(admin.ModelAdmin):
    list_display = ["time", "kind", "job_id", "node", "old_state", "new_state", "reason", "user"]
    list_filter = ["kind"]

    def has_change_permission(self, request, obj=None):
        return False


admin.site.register(ClusterConfig)
