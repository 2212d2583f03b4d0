"""What the hierarchical resources show at ``/metrics`` and on the dashboard: each layer's
use against its total, as ``scontrol show license`` reports it (Slurm's hres.html,
"Viewing a Resource"), from one read of the layers and the jobs holding them."""

from __future__ import annotations

from collections.abc import Sequence

from cluster.extensions import OverviewPanel, Sample, UsageBar
from hres import services
from hres.core.layers import LicenseView, license_view

LAYERS_PER_RESOURCE = 3  # the fullest of each resource; /hres/ shows them all


def _views() -> tuple[LicenseView, ...]:
    state = services.state_with_usage()
    return license_view(state) if state.resources else ()


def samples() -> list[Sample]:
    out = []
    for v in _views():
        labels = {"resource": v.license_name, "layer": v.layer_name}
        total = float("inf") if v.total is None else float(v.total)
        out += [
            Sample("fsched_hres_used", "HRES layer: amount held by jobs.", labels, v.used),
            Sample("fsched_hres_total", "HRES layer: amount jobs may use (+Inf: unlimited).", labels, total),
            Sample("fsched_hres_reserved", "HRES layer: amount held by reservations.", labels, v.reserved),
        ]
    return out


def panels() -> Sequence[OverviewPanel]:
    """Per resource, its fullest layers (ties: in the file's order)."""
    views = _views()
    if not views:
        return ()
    by_resource: dict[str, list[UsageBar]] = {}
    for v in views:
        total = "INFINITE" if v.total is None else v.total
        bar = UsageBar(f"{v.license_name} {v.layer_name}", v.used, v.total, f"{v.used}/{total}")
        by_resource.setdefault(v.license_name, []).append(bar)
    bars = [
        bar
        for resource in by_resource.values()
        for bar in sorted(resource, key=lambda b: -(b.pct or 0))[:LAYERS_PER_RESOURCE]
    ]
    return (OverviewPanel("HRES use", tuple(bars), link="/hres/"),)
