"""The tables hres/lua's controller callbacks receive, and what their return codes mean
(Slurm's hres.html, "Callbacks" and "hres/lua"), pure: the services hand in plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from cluster.core.hostlists import fold
from hres.core.layers import INF, Charge, ResourceState
from luaplug.codes import ESLURM, SUCCESS

REMOTE_FAIL = ESLURM["ESLURM_HRES_REMOTE_FAIL"][0]
MAINTENANCE_DISABLE = ESLURM["ESLURM_HRES_MAINTENANCE_DISABLE"][0]
MAINTENANCE_DOWN = ESLURM["ESLURM_HRES_MAINTENANCE_DOWN"][0]
MAINTENANCE_CODES = frozenset({MAINTENANCE_DISABLE, MAINTENANCE_DOWN})

# A job without a time limit is expected to end a year after its start (hres.html, `job`).
NO_LIMIT_SECONDS = 365 * 24 * 3600


class Outcome(Enum):
    """What a callback's end means for the job or the resource."""

    OK = "ok"
    REMOTE_FAIL = "remote fail"  # the external service is unavailable, not broken
    MAINTENANCE = "maintenance"  # create context: the resource's layers are disabled
    ERROR = "error"


def outcome(rc: int) -> Outcome:
    if rc == SUCCESS:
        return Outcome.OK
    if rc == REMOTE_FAIL:
        return Outcome.REMOTE_FAIL
    if rc in MAINTENANCE_CODES:
        return Outcome.MAINTENANCE
    return Outcome.ERROR


@dataclass(frozen=True)
class Timeouts:
    """Seconds a controller callback may run (None: no limit)."""

    prolog: float | None
    epilog: float | None


def _seconds(value: object) -> float | None:
    try:
        seconds = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return float(seconds) if seconds > 0 else None


def timeouts(options: Mapping[str, Any]) -> Timeouts:
    """PrologTimeout and EpilogTimeout, both defaulting to PrologEpilogTimeout (unset: no
    limit).  The callbacks before a job runs (create context, validate arguments, the
    pre-runs) take the first, those after it (revoke, controller epilog, destroy context)
    the second, as slurm.conf's man page pairs them for the Prolog and the Epilog."""
    both = _seconds(options.get("PrologEpilogTimeout"))
    prolog = _seconds(options.get("PrologTimeout"))
    epilog = _seconds(options.get("EpilogTimeout"))
    return Timeouts(prolog if prolog is not None else both, epilog if epilog is not None else both)


def ctx_table(name: str, config: Iterable[tuple[str, str]]) -> dict[str, Any]:
    return {"name": name, "config": dict(config)}


def layers_table(resource: ResourceState, *, with_usage: bool = True) -> list[dict[str, Any]]:
    """``layers``: each layer's name, nodes (a hostlist), total (-1: infinite), used and
    disable_layer; ``used`` is 0 everywhere before the running jobs' usage is restored."""
    out = []
    for i, layer in enumerate(resource.structure.layers):
        cap = layer.cap
        out.append(
            {
                "name": layer.name,
                "nodes": fold(sorted(layer.nodes)),
                "total": -1 if cap >= INF else cap,
                "used": resource.used[i] if with_usage else 0,
                "disable_layer": layer.disabled,
            }
        )
    return out


@dataclass(frozen=True)
class LayerChange:
    """What maintenance asked of one layer: disable_layer as it left it, and ``down``."""

    name: str
    disable: bool
    down: bool


def layer_changes(before: Sequence[Mapping[str, Any]], after: object) -> list[LayerChange]:
    """The layers whose disable_layer the maintenance changed, or that it set down, from
    the table as it was passed in and as it came back (a list of the same layers)."""
    if not isinstance(after, list):
        return []
    out = []
    for old, new in zip(before, after, strict=False):
        if not isinstance(new, Mapping):
            continue
        disable = new.get("disable_layer")
        disable = bool(disable) if isinstance(disable, bool) else old["disable_layer"]
        down = new.get("down") is True
        if down or disable != old["disable_layer"]:
            out.append(LayerChange(old["name"], disable or down, down))
    return out


def end_time(start: float, time_limit: int | None) -> int:
    """``job.end_time``: the Unix time the job is expected to end."""
    return int(start + (time_limit * 60 if time_limit else NO_LIMIT_SECONDS))


def job_table(
    *,
    job_id: int,
    run: int,
    user: str,
    uid: int | None,
    gid: int | None,
    account: str,
    partition: str,
    nodes: Sequence[str],
    end: int,
) -> dict[str, Any]:
    """``job``; ``sluid`` tells a run of the job from its other runs (after a requeue),
    which is what a service needs to refuse a late reservation of a run that ended."""
    return {
        "job_id": job_id,
        "sluid": f"{job_id}.{run}",
        "user_id": uid,
        "user_name": user or None,
        "group_id": gid,
        "account": account or None,
        "partition": partition,
        "nodes": fold(sorted(nodes)),
        "end_time": end,
    }


def prep_table(
    *,
    name: str,
    config: Iterable[tuple[str, str]],
    args: Iterable[tuple[str, str]],
    charge: Charge | None,
    layer_nodes: Mapping[str, Iterable[str]],
    job_nodes: Iterable[str],
    payload: str | None = None,
    async_running: bool = False,
) -> dict[str, Any]:
    """``prep``: what the job's nodes receive about one resource, fixed at its start."""
    nodes = set(job_nodes)
    layers = []
    for layer, amount in charge.layers if charge is not None else ():
        under = sorted(nodes & set(layer_nodes.get(layer, ())))
        layers.append({"name": layer, "count": amount, "nodes": fold(under)})
    return {
        "name": name,
        "config": dict(config),
        "plugin_args": dict(args),
        "payload": payload,
        "async_running": async_running,
        "layers": layers,
    }
