"""Admin pages of hierarchical resources.  A runtime update made here goes through
:func:`hres.services.hres_update`, the same service as ``scontrol update HRESName=``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from cluster.record_admin import RecordAdmin
from cluster.services.errors import ServiceError
from hres import services
from hres.core.layers import UNSET
from hres.models import LayerUpdate, ResourcesFile

_TRISTATE = [("", "unchanged"), ("true", "true"), ("false", "false")]


class LayerUpdateForm(forms.ModelForm):
    nodes = forms.CharField(required=False, help_text="node list; +list adds, -list removes")
    count = forms.CharField(required=False, help_text="absolute; -1 is infinite")
    base = forms.CharField(required=False, help_text="name:value,... (replaces the list)")
    clear_base = forms.BooleanField(required=False, help_text="set Base= (empty)")
    disable_hres = forms.ChoiceField(choices=_TRISTATE, required=False)
    disable_layer = forms.ChoiceField(choices=_TRISTATE, required=False)

    class Meta:
        model = LayerUpdate
        fields = ["resource", "layer"]

    def update_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        base: object = UNSET
        if d.get("clear_base"):
            base = ""
        elif d.get("base"):
            base = d["base"]
        return {
            "hres_name": d.get("resource") or "",
            "layer_name": d.get("layer") or "",
            "nodes": d.get("nodes") or None,
            "count": d.get("count") or UNSET,
            "base": base,
            "disable_hres": d.get("disable_hres") or None,
            "disable_layer": d.get("disable_layer") or None,
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kw = self.update_kwargs()
        changes = {
            k: v
            for k, v in kw.items()
            if k not in ("hres_name", "layer_name") and v is not UNSET and v is not None
        }
        if not changes:
            raise forms.ValidationError("No changes specified")
        try:  # a dry run on the state in force; the service checks again when saving
            services.apply_changes(services.current_state(), kw["hres_name"], kw["layer_name"], changes)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


@admin.register(LayerUpdate)
class LayerUpdateAdmin(admin.ModelAdmin):
    list_display = ["time", "user", "resource", "layer", "changes", "keep"]
    form = LayerUpdateForm

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # updates in force are a log: add a new one to change a layer again

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting one would change the layers in force with no service and no record;
        # a reconfigure drops them (Slurm's hres.html, "Runtime Updates").
        return False

    def save_model(self, request: HttpRequest, obj: LayerUpdate, form: LayerUpdateForm, change: bool) -> None:
        try:
            services.hres_update(actor=request.user, **form.update_kwargs())
        except ServiceError as exc:
            self.message_user(request, str(exc), level="error")
            return
        saved = LayerUpdate.objects.order_by("-id").first()
        if saved is not None:
            obj.pk = saved.pk  # the service wrote the row; the admin links to it


@admin.register(ResourcesFile)
class ResourcesFileAdmin(RecordAdmin):
    """resources.yaml in force: edited on disk and loaded by scontrol reconfigure."""

    list_display = ["path", "version", "loaded_at"]
    readonly_fields = ["path", "text", "version", "loaded_at"]
