"""The console's Resources page: each hierarchical resource as a tree of its layers.

``/hres/`` shows every resource (a sunburst and an indented table with usage bars), kept
live by the ``hres`` and ``jobs`` topics; ``/hres/<resource>/<layer>/`` lists the jobs
holding a layer and its nodes, and for staff a form that updates the layer through
:func:`hres.services.hres_update`, the one update service.  plotly.min.js is served
from the installed plotly package (cluster.plotly_asset), not copied into the repository.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from cluster import visibility
from cluster.models import Job
from cluster.services.errors import ServiceError
from cluster.views import console_view
from hres import plugin_view, services
from hres.core.layers import UNSET


def _tree_context() -> dict[str, Any]:
    tree = services.layer_tree()
    return {"resources": tree, "tree_url": reverse("hres-tree")}


@console_view
def layers(request: HttpRequest) -> HttpResponse:
    return render(request, "hres/layers.html", {"nav": "hres", **_tree_context()})


@console_view
def tree(request: HttpRequest) -> HttpResponse:
    return render(request, "hres/_tree.html", _tree_context())


def _visible_holders(request: HttpRequest, holders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PrivateData=jobs: other users' jobs are left out of the holders (cluster.visibility)."""
    if not visibility.hides(request.user, "jobs"):
        return holders
    ids = [h["job_id"] for h in holders]
    shown = set(
        Job.objects.filter(visibility.visible_jobs(request.user), pk__in=ids).values_list("id", flat=True)
    )
    return [h for h in holders if h["job_id"] in shown]


def _layer_context(request: HttpRequest, resource: str, layer: str) -> dict[str, Any]:
    found = next(
        (la for r in services.layer_tree() if r.name == resource for la in r.layers() if la.name == layer),
        None,
    )
    if found is None:
        raise Http404(f"No layer {layer} in hierarchical resource {resource}")
    return {
        "layer": found,
        "holders": _visible_holders(request, services.layer_holders(resource, layer)),
        "body_url": reverse("hres-layer-body", kwargs={"resource": resource, "layer": layer}),
        "base_text": ",".join(f"{n}:{v}" for n, v in found.base),
    }


@console_view
def layer_body(request: HttpRequest, resource: str, layer: str) -> HttpResponse:
    return render(request, "hres/_layer_body.html", _layer_context(request, resource, layer))


@require_http_methods(["GET", "HEAD", "POST"])
def layer(request: HttpRequest, resource: str, layer: str) -> HttpResponse:
    """A layer's page; staff POST an update here (the console's admin form)."""
    if not request.user.is_authenticated:
        from django.contrib.auth.views import redirect_to_login  # noqa: PLC0415

        return redirect_to_login(request.get_full_path())
    error = ""
    if request.method == "POST":
        data = request.POST
        try:
            services.hres_update(
                actor=request.user,
                hres_name=resource,
                layer_name=layer,
                nodes=data.get("nodes") or None,
                count=data.get("count") or UNSET,
                base="" if data.get("clear_base") else (data.get("base") or UNSET),
                disable_layer=data.get("disable_layer") or None,
                disable_hres=data.get("disable_hres") or None,
            )
        except ServiceError as exc:
            error = str(exc)
        else:
            return redirect("hres-layer", resource=resource, layer=layer)
    context = {"nav": "hres", "error": error, "form": request.POST if error else {}}
    context.update(_layer_context(request, resource, layer))
    context["plugin"] = plugin_view.resource_plugin(resource)
    return render(request, "hres/layer.html", context, status=400 if error else 200)
