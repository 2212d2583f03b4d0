"""The layer page's update (``scontrol update HRESName= LayerName= ...``) as a console action.

Staff only (the API's HresUpdate is StaffOnly; ``hres_update`` checks again).  The form's
fields are the runtime updates Slurm's hres.html allows on a layer: Nodes (a list, or
``+``/``-`` a list), Count, Base, DisableLayer and DisableHRES.  The update is confirmed,
then stored by the one service, with a success message and one audit entry on the stored
update (its before/after and the reason given).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from cluster.action_flow import ActionSpec, Field, run_action
from cluster.services.action_audit import action_audit_record
from hres import services
from hres.core.layers import UNSET
from hres.models import LayerUpdate

_BOOL = (("", "unchanged"), ("true", "true"), ("false", "false"))
FIELDS = (
    Field("nodes", "Nodes", "+node[33-36]"),
    Field("count", "Count", "-1"),
    Field("base", "Base", "name:value"),
    Field("clear_base", "Clear Base", choices=(("", "keep Base"), ("1", "clear Base"))),
    Field("disable_layer", "DisableLayer", choices=_BOOL),
    Field("disable_hres", "DisableHRES", choices=_BOOL),
)
# What an entry says about usage moves with the jobs, not with the update.
_NOT_CHANGES = {"used", "free", "reserved", "remote", "hres"}


def _entry(entries: list[dict[str, Any]], layer: str) -> dict[str, Any]:
    return next((e for e in entries if e.get("layer_name") == layer), {})


def _spec(resource: str, layer: str) -> ActionSpec:
    def perform(actor: Any, values: dict[str, str], reason: str) -> str:
        before = _entry(services.license_entries(resource), layer)
        after = _entry(
            services.hres_update(
                actor=actor,
                hres_name=resource,
                layer_name=layer,
                nodes=values["nodes"] or None,
                count=values["count"] or UNSET,
                base="" if values["clear_base"] else (values["base"] or UNSET),
                disable_layer=values["disable_layer"] or None,
                disable_hres=values["disable_hres"] or None,
            ),
            layer,
        )
        update = LayerUpdate.objects.filter(resource=resource, layer=layer).latest("pk")
        changes = {
            k: [before.get(k), v] for k, v in after.items() if k not in _NOT_CHANGES and before.get(k) != v
        }
        action_audit_record(
            actor=actor, instance=update, action="hres_update", reason=reason, changes=changes
        )
        return f"Layer {layer} of {resource} updated."

    return ActionSpec(
        title=f"Update layer {layer} of {resource}",
        question=f"Update layer {layer} of {resource}?",
        perform=perform,
        back=reverse("hres-layer", kwargs={"resource": resource, "layer": layer}),
        fields=FIELDS,
        staff_only=True,
    )


def layer_update(request: HttpRequest, resource: str, layer: str) -> HttpResponse:
    return run_action(request, _spec(resource, layer))
