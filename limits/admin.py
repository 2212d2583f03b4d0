"""The accounting policy in the admin: every save and delete goes through
:mod:`limits.services` (the same validation as sacctmgr: TRES strings, negative limits, an
unknown QOS, a cycle in the account tree), and is audited with before/after."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from cluster.record_admin import RecordAdmin
from cluster.services.errors import ServiceError
from limits import services
from limits.models import QOS, Account, Association, Cluster, LimitsUser, Tres, Usage


class _CheckedForm(forms.ModelForm):
    """Runs the service's checks as form validation, so a refusal shows on the form."""

    actor = None

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.errors:
            return
        try:
            services.row_save(actor=self.actor, row=self.instance, commit=False)
        except ServiceError as exc:
            self.add_error(None, str(exc))


class ServiceAdmin(admin.ModelAdmin):
    def get_form(self, request: HttpRequest, obj=None, change: bool = False, **kwargs):
        kwargs.setdefault("form", _CheckedForm)
        form = super().get_form(request, obj, change=change, **kwargs)
        form.actor = request.user
        return form

    def save_model(self, request: HttpRequest, obj, form, change: bool) -> None:
        services.row_save(actor=request.user, row=obj)

    def delete_model(self, request: HttpRequest, obj) -> None:
        services.row_delete(actor=request.user, row=obj)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:
        for obj in queryset:
            services.row_delete(actor=request.user, row=obj)


@admin.register(Association)
class AssociationAdmin(ServiceAdmin):
    list_display = ("__str__", "parent", "fairshare", "grp_tres", "grp_tres_mins", "max_jobs", "qos")
    list_filter = ("cluster", "account")
    search_fields = ("account__name", "user__name")


@admin.register(QOS)
class QOSAdmin(ServiceAdmin):
    list_display = ("name", "priority", "flags", "usage_factor", "grp_tres", "max_tres_per_user")
    search_fields = ("name",)


@admin.register(Account)
class AccountAdmin(ServiceAdmin):
    list_display = ("name", "description", "organization")
    search_fields = ("name",)


@admin.register(LimitsUser)
class LimitsUserAdmin(ServiceAdmin):
    list_display = ("name", "default_account", "default_qos", "admin_level")
    search_fields = ("name",)


@admin.register(Cluster)
class ClusterAdmin(ServiceAdmin):
    list_display = ("name",)


@admin.register(Tres)
class TresAdmin(RecordAdmin):
    """Slurm's tres table (seeded with the base TRES); more are tracked through
    AccountingStorageTRES in slurm.conf, so a reconfigure records them."""

    list_display = ("name",)


@admin.register(Usage)
class UsageAdmin(RecordAdmin):
    """Usage history, decayed every cycle; reset with sacctmgr (RawUsage=0), not here."""

    list_display = ("key", "raw_usage", "tres_seconds", "wall_seconds")
    readonly_fields = ("key", "raw_usage", "tres_seconds", "wall_seconds")
