"""Hierarchical resources in the controller: configuration, state, views, runtime updates.

The pure core (``hres.core.config``, ``hres.core.layers``, ``hres.core.plugin``) decides; this module
reads and writes the database around it (docs/architecture.md).

State, shared by every process: the resources.yaml text in force (:class:`ResourcesFile`)
and the runtime updates in force (:class:`LayerUpdate`) are in the database; each process
rebuilds the layers from them (cached by version, so a pass costs one small query) and the
usage from the ``LicensesAlloc`` of the jobs holding resources.  There is no usage counter
to keep in step: a job's end releases exactly what it was charged because it simply stops
being counted (Slurm's hres.html, "Runtime Updates").

Entry points:

* :func:`read_resources` / :func:`resources_store`: validate and install resources.yaml
  (called by ``cluster.services.configuration.config_load``, the one reconfigure path);
* :func:`current_config`, :func:`current_state`, :func:`holding_charges`;
* :func:`pass_plugin`: the :class:`hres.core.plugin.HresPlugin` for a scheduler pass;
* :func:`license_entries`: ``scontrol show license`` (HRES layers and cluster licenses);
* :func:`hres_update`: the one service behind ``scontrol update HRESName=``, the REST
  ``POST /slurm/v0.0.46/hres/``, the admin and the console.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from cluster import clock, publish, triggers
from cluster.core.licenses import plain_alloc, plain_request
from cluster.core.slurmconf import ConfigError
from cluster.core.states import NodeFlag
from cluster.models import ClusterConfig, Event, Job, Node, Reservation
from cluster.services import pass_snapshot
from cluster.services import rows as db_rows
from cluster.services.core_extensions import holding_license_rows
from cluster.services.errors import NotFound, PermissionDenied, ServiceError
from hres.core import persistence
from hres.core.config import DEFAULT_FILE, HresConfig, parse_resources
from hres.core.layers import (
    UNSET,
    Charge,
    HresState,
    LicenseView,
    build_state,
    license_view,
    parse_bool,
    parse_licenses_alloc,
    update_layer,
    update_resource,
)
from hres.core.persistence import Membership
from hres.core.plugin import HresPlugin, UsageMemo
from hres.core.reservation_window import Holding, Reserved
from hres.models import LayerUpdate, ResourcesFile
from slurmwords.licenses import LicenseItem, parse_reservation_licenses

log = logging.getLogger(__name__)

TOPIC = "hres"  # the console topic of layer changes (usage changes publish "jobs")


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class ResourcesText:
    """A validated resources.yaml, ready to be stored (path "" and config None: none)."""

    path: str
    text: str
    config: HresConfig | None


def resources_path(conf_dir: Path, resources_file: str | None) -> tuple[Path, bool]:
    """The file to read and whether slurm.conf named it (``ResourcesFile=``)."""
    if resources_file:
        path = Path(resources_file)
        return (path if path.is_absolute() else conf_dir / path), True
    return conf_dir / DEFAULT_FILE, False


def read_resources(
    conf_dir: Path,
    resources_file: str | None,
    *,
    cluster_nodes: Collection[str],
    cluster_licenses: Collection[str],
) -> ResourcesText:
    """Read and fully validate resources.yaml; raise ConfigError listing every problem.

    Without ``ResourcesFile=``, a missing default file means no hierarchical resources;
    a file slurm.conf names must exist.
    """
    path, named = resources_path(conf_dir, resources_file)
    if not path.exists() and not named:
        return ResourcesText("", "", None)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        from hres.core.config import HresProblem  # noqa: PLC0415

        raise ConfigError([HresProblem(str(path), 0, f"cannot read: {exc}")]) from None
    config = parse_resources(
        text, file=str(path), cluster_nodes=cluster_nodes, cluster_licenses=cluster_licenses
    )
    return ResourcesText(str(path), text, config)


def resources_store(loaded: ResourcesText, *, actor: str, now=None, recover: bool = False) -> None:
    """Install a validated resources.yaml (inside the caller's transaction).

    Runtime updates are dropped (Slurm's hres.html, "Runtime Updates": count, base and
    disabled changes are lost on reconfigure), except the dynamic nodes' configured layers
    (``keep``) and the node layer changes that survive: those of dynamic and cloud nodes
    always, those of the other nodes only with ``recover`` (``fsched server -R``).  See
    :func:`_saved_layers`.
    """
    saved = _saved_layers(recover=recover)
    row = ResourcesFile.objects.select_for_update().get_or_create(pk=1)[0]
    row.path = loaded.path
    row.text = loaded.text
    row.version += 1
    row.loaded_at = now or clock.now()
    row.save()
    LayerUpdate.objects.filter(keep=False).delete()
    _restore_layers(saved, actor=actor, now=row.loaded_at)
    publish.console_changed(TOPIC)


def configured_state(nodes: tuple[str, ...] | None = None) -> HresState:
    """The configured layers: resources.yaml plus the layers dynamic nodes were created
    with, without any runtime update.

    Every submission asking for a resource reads it (the never-runs check): kept per
    process like current_state's, validated by the file's version, the kept updates' last
    id and count, and the node list (profiled at 10,000 nodes: 68 ms a build)."""
    row, last, count = _configured_in_force()
    nodes = _node_names() if nodes is None else nodes
    key = (row.version, last, count)
    # One state kept, its node list compared by identity first, as current_state's (the
    # list as a dictionary key was hashed, 10,000 names, at every submission).
    kept = _configured_kept
    if kept is not None and kept[0] == key and (kept[1] is nodes or kept[1] == nodes):
        return kept[2]
    updates = LayerUpdate.objects.filter(keep=True).order_by("id")
    state = _replay(build_state(_config_for(row), nodes), updates)
    _keep_configured((key, nodes, state))
    return state


def _keep_configured(kept: tuple[tuple[int, int, int], tuple[str, ...], HresState]) -> None:
    global _configured_kept  # noqa: PLW0603 - one per process, replaced whole
    _configured_kept = kept


def _configured_in_force() -> tuple[ResourcesFile, int, int]:
    """The resources.yaml row, the last kept update's id and how many there are: what the
    configured layers depend on besides the node list (three statements each submission
    asking for a resource made).  Kept until one of the two tables is written."""
    return pass_snapshot.kept_value(
        "hres.configured_in_force", (ResourcesFile, LayerUpdate), _read_configured_in_force
    )


def _read_configured_in_force() -> tuple[ResourcesFile, int, int]:
    row = ResourcesFile.current()
    kept = LayerUpdate.objects.filter(keep=True)
    last = kept.aggregate(m=Max("id"))["m"] or 0
    return row, last, kept.count() if last else 0


_AWAY = NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN


def _saved_layers(*, recover: bool) -> dict[str, Membership]:
    """Before a reconfigure or restart: node -> the layers it keeps (Slurm's hres.html,
    "Runtime Updates").  Count, base and disabled state are never saved; a node powered
    down or powering down uses its configured layers."""
    rows = list(Node.objects.order_by("name").values_list("name", "in_conf", "flags"))
    names = tuple(name for name, _, _ in rows)
    diff = persistence.changed(current_state(names), configured_state(names), names)
    keep = {}
    for name, in_conf, flags in rows:
        if name not in diff or flags & _AWAY:
            continue
        if not in_conf or flags & NodeFlag.CLOUD or recover:
            keep[name] = diff[name]
    return keep


def _restore_layers(saved: Mapping[str, Membership], *, actor: str, now) -> None:
    """Replay the kept node layers over the new resources.yaml; a node whose saved layer
    is gone or no longer a leaf loses all its saved changes (logged error)."""
    if not saved:
        return
    state = current_state()
    for node, layers in sorted(saved.items()):
        try:
            state = persistence.apply_membership(state, node, layers)
        except ValueError as exc:
            log.error("node %s: saved HRES layers discarded, back to its configured layers: %s", node, exc)
            continue
        LayerUpdate.objects.create(
            time=now, user=actor, resource="", changes={"node": node, "layers": persistence.as_json(layers)}
        )


def node_configured_layers(names: Iterable[str], *, actor: str = "", now=None) -> list[str]:
    """Nodes powered down, or failing to resume within ResumeTimeout, return to their
    configured layers (Slurm's hres.html, "Runtime Updates").  Returns the nodes that changed."""
    names = tuple(names)
    if not names or not current_config().resources:
        return []
    nodes = _node_names()
    diff = persistence.changed(configured_state(nodes), current_state(nodes), names)
    now = now or clock.now()
    for node, layers in sorted(diff.items()):
        LayerUpdate.objects.create(
            time=now, user=actor, resource="", changes={"node": node, "layers": persistence.as_json(layers)}
        )
    if diff:
        publish.console_changed(TOPIC)
    return sorted(diff)


# --------------------------------------------------------------------------- state (cached)

_lock = threading.Lock()
_config_cache: dict[int, HresConfig] = {}
_state_kept: tuple[tuple[int, int, int], tuple[str, ...], HresState] | None = None
_configured_kept: tuple[tuple[int, int, int], tuple[str, ...], HresState] | None = None


def _config_for(row: ResourcesFile) -> HresConfig:
    with _lock:
        cached = _config_cache.get(row.version)
    if cached is not None:
        return cached
    if not row.text.strip():
        config = HresConfig((), row.path or DEFAULT_FILE)
    else:
        # Validated when loaded; the node check is left out here because nodes come and go.
        config = parse_resources(row.text, file=row.path or DEFAULT_FILE)
    with _lock:
        _config_cache.clear()
        _config_cache[row.version] = config
    return config


def current_config() -> HresConfig:
    # Every pass and every request parse reads it (modes()): kept inside the simulator's
    # run until resources.yaml is stored again.
    return pass_snapshot.kept_value("hres.config", (ResourcesFile,), _current_config)


def _current_config() -> HresConfig:
    return _config_for(_resources_row())


def _resources_row() -> ResourcesFile:
    """``ResourcesFile.current()`` read without compiling a query (each pass may read it)."""
    found = db_rows.load(ResourcesFile, None, {"pk": 1})
    return found[0] if found else ResourcesFile.current()


def _node_names() -> tuple[str, ...]:
    """The cluster's node names in the scheduler snapshot's order (so indices agree with
    it); kept in the simulator's run until a node is added, removed or renamed (the node
    writes of every start and end set other columns: the simulator's log re-read the
    10,000 names after each, 6% of its run at 10,000 nodes)."""
    return pass_snapshot.kept_value("hres.node_names", (Node,), _read_node_names, fields=("name",))


def _read_node_names() -> tuple[str, ...]:
    """The names as read, or the tuple read last time when they are the same: a node
    added or removed reads them again, and current_state and configured_state compare node
    lists by identity first (equal tuples of 10,000 names compared at every call were 0.75 ms a
    submission, hashed as a cache key as much again)."""
    global _names_read  # noqa: PLW0603 - one per process, replaced whole
    names = tuple(name for (name,) in db_rows.select(Node, ("name",), order_by=("name",)))
    last = _names_read
    if names == last:
        return last
    _names_read = names
    return names


_names_read: tuple[str, ...] = ()


def _layers_in_force() -> tuple[ResourcesFile, int, int]:
    """The resources.yaml row in force, the last runtime update's id and how many there
    are: what the layers in force depend on besides the node list.  Kept in the
    simulator's run until one of the two tables is written."""
    return pass_snapshot.kept_value(
        "hres.layers_in_force", (ResourcesFile, LayerUpdate), _read_layers_in_force
    )


def _read_layers_in_force() -> tuple[ResourcesFile, int, int]:
    row = _resources_row()
    ids = [pk for (pk,) in db_rows.select(LayerUpdate, ("id",))]
    return row, max(ids, default=0), len(ids)


def _replay(state: HresState, updates: Iterable[LayerUpdate]) -> HresState:
    for up in updates:
        try:
            if "layers" in up.changes:  # a node's whole membership (saved, or configured)
                layers = persistence.from_json(up.changes["layers"])
                state = persistence.apply_membership(state, str(up.changes.get("node")), layers)
                continue
            state = apply_changes(state, up.resource, up.layer, up.changes)
        except ValueError as exc:
            # A node deleted since, a layer gone after a reconfigure: skip, keep the rest.
            log.warning("runtime update %s no longer applies: %s", up, exc)
    return state


def current_state(nodes: tuple[str, ...] | None = None) -> HresState:
    """The layers in force (resources.yaml plus runtime updates), without usage.

    Built again only when resources.yaml, the runtime updates or the node list change;
    every pass reads it, so in the simulator's run the reads that tell are kept too."""
    row, last, count = _layers_in_force()
    nodes = _node_names() if nodes is None else nodes
    key = (row.version, last, count)
    # One state kept: compared by identity first, the node list of a large cluster costs
    # more to hash than the rest of the check.
    kept = _state_kept
    if kept is not None and kept[0] == key and (kept[1] is nodes or kept[1] == nodes):
        return kept[2]
    state = build_state(_config_for(row), nodes)
    state = _replay(state, LayerUpdate.objects.order_by("id"))
    _keep_state((key, nodes, state))
    return state


def _keep_state(kept: tuple[tuple[int, int, int], tuple[str, ...], HresState]) -> None:
    global _state_kept  # noqa: PLW0603 - one per process, replaced whole
    _state_kept = kept


# The last rows read and their charges: the kept rows (holding_license_rows) are the same
# list until the job table is written, so a pass with nothing new builds nothing
# (compared by identity: a list read afresh is read again whatever it holds).
_charges_memo: tuple[list[tuple[int, str, str, str]], dict[int, tuple[Charge, ...]]] | None = None


def holding_charges(rows: list[tuple[int, str, str, str]] | None = None) -> dict[int, tuple[Charge, ...]]:
    """job id -> the HRES charges of every job holding resources (from LicensesAlloc);
    shared: read-only."""
    global _charges_memo  # noqa: PLW0603 - one per process, replaced whole
    found = holding_license_rows() if rows is None else rows
    memo = _charges_memo
    if memo is not None and memo[0] is found:
        return memo[1]
    out = _read_charges(found)
    _charges_memo = (found, out)
    return out


def _read_charges(found: list[tuple[int, str, str, str]]) -> dict[int, tuple[Charge, ...]]:
    out: dict[int, tuple[Charge, ...]] = {}
    for job_id, _lic, alloc, resv in found:
        if not alloc:
            continue
        try:
            charges = _charges_of(alloc, resv)
        except ValueError:
            log.error("job %s: unreadable LicensesAlloc %r", job_id, alloc)
            continue
        if charges:
            out[job_id] = charges
    return out


@lru_cache(maxsize=65536)
def _charges_of(alloc: str, reservation: str) -> tuple[Charge, ...]:
    # Every pass reads every holding job's LicensesAlloc, which does not change while the
    # job holds it.  Pure, and its value immutable (frozen charges): shared in every mode.
    return parse_licenses_alloc(alloc, reservation=reservation)


def reservation_items(now=None, *, exclude: str = "") -> dict[str, tuple[LicenseItem, ...]]:
    """The HRES amounts of the reservations active at ``now`` (name -> items naming their
    layer), as ``HresState.with_reservations`` takes them.  A reservation whose licenses
    no longer parse (a resource removed by a reconfigure) reserves nothing, logged."""
    now = now or clock.now()
    out: dict[str, tuple[LicenseItem, ...]] = {}
    for name, start, end, items, error in _reserving():
        if not (start <= now < end) or name == exclude:
            continue
        if error is not None:
            log.error("reservation %s: licenses %r no longer apply: %s", name, *error)
        elif items:
            out[name] = items
    return out


# A reservation with licenses: name, window, its HRES items, or (licenses, why) when they
# no longer parse.
_Reserving = tuple[str, datetime, datetime, tuple[LicenseItem, ...], tuple[str, str] | None]


def _reserving() -> tuple[_Reserving, ...]:
    """Every reservation with licenses, parsed against the resources in force: each pass
    reads them (kept in the simulator until a reservation or resources.yaml is written);
    which are active is decided per call, by the clock."""
    return pass_snapshot.kept_value("hres.reserving", (Reservation, ResourcesFile), _read_reserving)


def _read_reserving() -> tuple[_Reserving, ...]:
    hres_modes = modes()
    if not hres_modes:
        return ()
    out = []
    fields = ("name", "start_time", "end_time", "licenses")
    # Ordered as the model's Meta orders them, as reservation_items read them before.
    for name, start, end, text in db_rows.select(Reservation, fields, order_by=("start_time", "name")):
        if not text:
            continue
        try:
            items = tuple(
                it for it in parse_reservation_licenses(text, hres=hres_modes) if it.name in hres_modes
            )
        except ValueError as exc:
            out.append((name, start, end, (), (text, str(exc))))
            continue
        out.append((name, start, end, items, None))
    return tuple(out)


def reservations_overlapping(start: datetime, end: datetime, *, exclude: str = "") -> list[Reserved]:
    """The HRES amounts of the reservations whose window meets ``[start, end)``, with
    their windows (licenses that no longer parse: left out, as :func:`reservation_items`)."""
    hres_modes = modes()
    if not hres_modes:
        return []
    rows = (
        Reservation.objects.filter(start_time__lt=end, end_time__gt=start)
        .exclude(licenses="")
        .exclude(name=exclude)
        .values_list("name", "start_time", "end_time", "licenses")
    )
    out = []
    for name, begin, finish, text in rows:
        try:
            items = tuple(
                it for it in parse_reservation_licenses(text, hres=hres_modes) if it.name in hres_modes
            )
        except ValueError:
            continue
        if items:
            out.append(Reserved(name, begin, finish, items))
    return out


def holdings() -> list[Holding]:
    """What each running job holds, with its expected end (start plus time limit)."""
    charges = holding_charges()
    rows = Job.objects.filter(pk__in=list(charges)).values_list("id", "start_time", "time_limit")
    out = []
    for job_id, begin, limit in rows:
        end = begin + timedelta(minutes=limit) if begin is not None and limit else None
        out.append(Holding(charges[job_id], end))
    return out


def with_active_reservations(state: HresState, now=None) -> HresState:
    """``state`` with the amounts of the active reservations; an amount naming a layer
    gone since is dropped with its reservation (logged), the others still apply."""
    items = reservation_items(now)
    memo = _reserved_memo
    if memo is not None and memo[0] is state and memo[1] == items:
        return memo[2]  # the same layers, the same active reservations: the same state
    try:
        reserved = state.with_reservations(items)
    except ValueError:
        kept = {}
        for name, its in items.items():
            try:
                state.with_reservations({name: its})
            except ValueError as exc:
                log.error("%s", exc)
                continue
            kept[name] = its
        return state.with_reservations(kept)
    _remember_reserved(state, items, reserved)
    return reserved


# The last state with_active_reservations gave, for the passes between two changes of the
# layers or of the reservations active; states are immutable, so any thread may share it.
_reserved_memo: tuple[HresState, dict[str, tuple[LicenseItem, ...]], HresState] | None = None


def _remember_reserved(
    state: HresState, items: dict[str, tuple[LicenseItem, ...]], reserved: HresState
) -> None:
    global _reserved_memo  # noqa: PLW0603 - one per process, replaced whole
    _reserved_memo = (state, items, reserved)


def state_with_usage() -> HresState:
    state = with_active_reservations(current_state())
    return _view_memo.with_usage(state, tuple(holding_charges().items()))


# The passes' layers with usage, kept from one pass to the next (hres.core.plugin.UsageMemo).
_usage_memo = UsageMemo()
# The same for the layers as shown (the simulator's log asks after every event).
_view_memo = UsageMemo()


def pass_plugin(rows: list[tuple[int, str, str, str]] | None = None, now=None) -> HresPlugin | None:
    """The HRES plugin of a scheduler pass, or None when no resource is configured.  The
    active reservations' amounts are held back from every job but theirs."""
    state = current_state()
    if not state.resources:
        return None
    return HresPlugin(with_active_reservations(state, now), holding_charges(rows), memo=_usage_memo)


def modes() -> dict:
    """HRES name -> Mode, for parsing requests."""
    return current_config().modes()


def variables() -> dict[str, dict[str, int]]:
    """HRES name -> its ``variables`` of resources.yaml (name -> amount), for requests."""
    return {r.name: dict(r.variables) for r in current_config().resources if r.variables}


# --------------------------------------------------------------------------- views


def _plain_entries(totals: Mapping[str, int], rows: list[tuple[int, str, str, str]]) -> list[dict[str, Any]]:
    hres_modes = modes()
    used: dict[str, int] = dict.fromkeys(totals, 0)
    for _job_id, lic, alloc, _resv in rows:
        held = plain_alloc(alloc) if alloc else plain_request(lic, hres_modes)
        for name, count in held:
            if name in used:
                used[name] += count
    return [
        {
            "license_name": name,
            "total": total,
            "used": used[name],
            "free": max(0, total - used[name]),
            "reserved": 0,
            "remote": False,
            "hres": False,
        }
        for name, total in totals.items()
    ]


def view_dict(v: LicenseView) -> dict[str, Any]:
    d = asdict(v)
    d["base"] = [{"name": n, "value": a} for n, a in v.base]
    d["hres"] = True
    return d


def license_entries(name: str | None = None) -> list[dict[str, Any]]:
    """``scontrol show license [NAME]``: cluster licenses, then one entry per HRES layer."""
    rows = holding_license_rows()
    state = with_active_reservations(current_state())
    state = _view_memo.with_usage(state, tuple(holding_charges(rows).items()))
    entries = _plain_entries(ClusterConfig.current().licenses, rows)
    entries += [view_dict(v) for v in license_view(state)]
    if name is not None:
        entries = [e for e in entries if e["license_name"] == name]
        if not entries:
            raise NotFound(f"License {name} not found")
    return entries


def layer_holders(resource: str, layer: str) -> list[dict[str, Any]]:
    """The running jobs holding a layer, with the amount each was charged on it."""
    out = []
    for job_id, _lic, alloc, resv in holding_license_rows():
        for c in holding_charges([(job_id, "", alloc, resv)]).get(job_id, ()):
            if c.resource == resource and c.on(layer):
                out.append({"job_id": job_id, "amount": c.on(layer)})
    users = dict(Job.objects.filter(pk__in=[o["job_id"] for o in out]).values_list("id", "user"))
    nodes = dict(Job.objects.filter(pk__in=[o["job_id"] for o in out]).values_list("id", "node_list"))
    for o in out:
        o["user"] = users.get(o["job_id"], "")
        o["node_list"] = nodes.get(o["job_id"], "")
    return out


# --------------------------------------------------------------------------- runtime updates


def _bool(value: object, key: str) -> bool:
    if isinstance(value, bool):
        return value
    try:
        return parse_bool(str(value))
    except ValueError:
        raise ValueError(f"{key}: expected true or false, not {value!r}") from None


def apply_changes(state: HresState, resource: str, layer: str, changes: Mapping[str, Any]) -> HresState:
    """One runtime update on a state (pure rules of hres.core.layers); ValueError if refused."""
    if state.get(resource) is None:
        raise ValueError(f"Invalid HRES name: no hierarchical resource {resource}")
    layer_keys = {"nodes", "count", "base", "disable_layer"} & set(changes)
    if layer_keys and not layer:
        raise ValueError(f"LayerName is needed to change {', '.join(sorted(layer_keys))}")
    if layer:
        state.resource(resource).structure.layer(layer)  # ValueError: no such layer
    if "disable_hres" in changes:
        state = update_resource(state, resource, disable_hres=_bool(changes["disable_hres"], "DisableHRES"))
    if layer_keys:
        kwargs: dict[str, Any] = {}
        if "nodes" in changes:
            kwargs["nodes"] = str(changes["nodes"])
        if "count" in changes:
            kwargs["count"] = changes["count"]
        if "base" in changes:
            base = changes["base"]
            if isinstance(base, list):
                try:
                    base = tuple(
                        (str(b["name"]), b["value"]) if isinstance(b, dict) else (str(b[0]), b[1])
                        for b in base
                    )
                except (KeyError, IndexError, TypeError):
                    raise ValueError(f"Base: expected name:value pairs, not {base!r}") from None
            kwargs["base"] = "" if base is None else base
        if "disable_layer" in changes:
            kwargs["disable_layer"] = _bool(changes["disable_layer"], "DisableLayer")
        state = update_layer(state, resource, layer, **kwargs)
    return state


def _layer_snapshot(state: HresState, resource: str, layer: str) -> dict[str, Any]:
    for v in license_view(state):
        if v.license_name == resource and (v.layer_name == layer or not layer):
            d = view_dict(v)
            for key in ("used", "free", "reserved", "total", "remote", "hres"):
                d.pop(key, None)
            return d
    return {}


UPDATE_KEYS = ("nodes", "count", "base", "disable_hres", "disable_layer")


@transaction.atomic
def hres_update(
    *,
    actor: AbstractBaseUser,
    hres_name: str,
    layer_name: str = "",
    nodes: str | None = None,
    count: object = UNSET,
    base: object = UNSET,
    disable_hres: object = None,
    disable_layer: object = None,
) -> list[dict[str, Any]]:
    """``scontrol update HRESName=R [LayerName=L] [Nodes=] [Count=] [Base=] [DisableHRES=]
    [DisableLayer=]``: validated against the state in force, stored, audited, published.

    Returns the entries of the changed resource as ``scontrol show license`` gives them.
    Raises ServiceError (and changes nothing) when the update is refused.
    """
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    hres_name = (hres_name or "").strip()
    layer_name = (layer_name or "").strip()
    if not hres_name:
        raise ServiceError("HRESName is required", field="hres_name")
    changes: dict[str, Any] = {}
    if nodes is not None:
        changes["nodes"] = str(nodes)
    if count is not UNSET and count is not None:
        changes["count"] = count
    if base is not UNSET:
        changes["base"] = base
    if disable_hres is not None:
        changes["disable_hres"] = disable_hres
    if disable_layer is not None:
        changes["disable_layer"] = disable_layer
    if not changes:
        raise ServiceError("No changes specified")
    # Serialise updates across processes: each is validated against the one before it.
    ResourcesFile.objects.select_for_update().get_or_create(pk=1)
    state = current_state()
    try:
        after = apply_changes(state, hres_name, layer_name, changes)
        # Normalise what is stored, so a replay means the same thing.
        if "disable_hres" in changes:
            changes["disable_hres"] = _bool(changes["disable_hres"], "DisableHRES")
        if "disable_layer" in changes:
            changes["disable_layer"] = _bool(changes["disable_layer"], "DisableLayer")
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    now = clock.now()
    who = actor.get_username()
    LayerUpdate.objects.create(time=now, user=who, resource=hres_name, layer=layer_name, changes=changes)
    Event.objects.create(
        time=now,
        kind=Event.Kind.CONFIG,
        reason="hres update",
        new_state=f"{hres_name}/{layer_name}" if layer_name else hres_name,
        user=who,
        detail={
            "hres_name": hres_name,
            "layer_name": layer_name,
            "changes": changes,
            "before": _layer_snapshot(state, hres_name, layer_name),
            "after": _layer_snapshot(after, hres_name, layer_name),
        },
    )
    publish.console_changed(TOPIC)
    triggers.schedule_after_commit()
    return license_entries_after(after, hres_name)


def license_entries_after(state: HresState, resource: str) -> list[dict[str, Any]]:
    state = state.with_usage(c for cs in holding_charges().values() for c in cs)
    return [view_dict(v) for v in license_view(state) if v.license_name == resource]


# --------------------------------------------------------------------------- the layer tree


# A layer's usage bar shows the warning colour from this share of its total on (the same
# threshold as the limits page's meters).
WARN_PCT = 90


@dataclass
class TreeLayer:
    """A layer as the console's tree shows it."""

    resource: str
    name: str
    nodes: str
    used: int
    total: int | None  # None: infinite
    conf_total: int | None
    base_usage: int
    reserved: int
    free: int | None
    disabled: bool  # the layer or its resource
    base: list[tuple[str, int]]
    children: list[TreeLayer]
    depth: int = 0

    @property
    def pct(self) -> int:
        if not self.total:
            return 0 if self.total is None or not self.used else 100
        return min(100, round(100 * self.used / self.total))

    @property
    def near_full(self) -> bool:
        """The usage bar turns to the warning colour from WARN_PCT on."""
        return self.pct >= WARN_PCT

    def walk(self) -> Iterable[TreeLayer]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class TreeResource:
    name: str
    mode: int
    disabled: bool
    roots: list[TreeLayer]

    def layers(self) -> list[TreeLayer]:
        return [la for root in self.roots for la in root.walk()]

    @property
    def sunburst_json(self) -> str:
        return json.dumps(self.sunburst())

    def sunburst(self) -> dict[str, Any]:
        """plotly sunburst data: the tree coloured by use.  Mode 1/2 areas are sized by
        each layer's usage (its layers count apart, so their totals sum to no whole), or all
        alike while nothing is used; Mode 3 areas by each leaf layer's total, a parent
        spanning its children."""
        ids, labels, parents, values, colours, text = [], [], [], [], [], []
        rows = self.layers()
        biggest = max((la.total or 0 for la in rows), default=1) or 1
        # Nothing used yet (an idle cluster): every leaf the same size, so that the tree's
        # shape shows instead of its root alone.
        by_usage = self.mode in (1, 2) and any(la.used for la in rows)
        equal = self.mode in (1, 2) and not by_usage
        parent_of = {id(c): la for la in rows for c in la.children}
        for la in rows:
            ids.append(la.name)
            labels.append(la.name)
            parent = parent_of.get(id(la))
            parents.append(parent.name if parent else "")
            if by_usage:
                values.append(la.used)
            elif equal:
                values.append(0 if la.children else 1)  # a parent is its children: full rings
            elif la.children:
                # Mode 3 children may sum past their parent; sized as the sum, the rings are
                # whole (the parent's own total is in its label and colour).
                values.append(0)
            else:
                values.append(la.total if la.total is not None else biggest)
            colours.append(-1 if la.disabled else la.pct)
            total = "INFINITE" if la.total is None else la.total
            text.append(f"{la.used}/{total} used{' (disabled)' if la.disabled else ''}")
        return {
            "ids": ids,
            "labels": labels,
            "parents": parents,
            "values": values,
            "colours": colours,
            "text": text,
        }


def _containment_parents(masks: list[frozenset[str]]) -> list[int | None]:
    """Mode 1/2: a layer's parent is the smallest other layer whose nodes contain its own
    (an identical set counts when it comes earlier in the file)."""
    out: list[int | None] = []
    for i, mine in enumerate(masks):
        best = None
        for j, other in enumerate(masks):
            if i == j or not mine <= other or (mine == other and j > i):
                continue
            if best is None or len(other) < len(masks[best]):
                best = j
        out.append(best)
    return out


def layer_tree() -> list[TreeResource]:
    """Every resource as a tree: Mode 3 by parent_name, Mode 1/2 by node-set containment."""
    state = state_with_usage()
    views = license_view(state)
    out = []
    for res in state.resources:
        st = res.structure
        mine = [v for v in views if v.license_name == st.name]
        masks = [la.nodes for la in st.layers]
        mode3 = st.mode == 3
        parents = [la.parent for la in st.layers] if mode3 else _containment_parents(masks)
        items = [
            TreeLayer(
                resource=st.name,
                name=v.layer_name,
                nodes=v.nodes,
                used=v.used,
                total=v.total,
                conf_total=v.conf_total,
                base_usage=v.base_usage,
                reserved=v.reserved,
                free=v.free,
                disabled=v.disable_layer or v.disable_hres,
                base=list(v.base),
                children=[],
            )
            for v in mine
        ]
        roots = []
        for i, p in enumerate(parents):
            (items[p].children if p is not None else roots).append(items[i])
        for root in roots:
            stack = [(root, 0)]
            while stack:
                la, d = stack.pop()
                la.depth = d
                stack.extend((c, d + 1) for c in la.children)
        out.append(TreeResource(st.name, int(st.mode), st.disabled, roots))
    return out


# --------------------------------------------------------------------------- dynamic nodes


def parse_node_hres(text: str) -> list[tuple[str, str]]:
    """A node's ``HRES=`` parameter (Slurm's hres.html, "Dynamic Nodes"): a JSON list of
    ``{"hres_name": ..., "layer_name": ...}`` -> ``[(resource, layer), ...]``."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError(f"HRES={text}: not a JSON list") from None
    if not isinstance(data, list):
        raise ValueError(f"HRES={text}: not a JSON list")
    out = []
    for item in data:
        if not isinstance(item, dict) or not {"hres_name", "layer_name"} <= set(item):
            raise ValueError(f"HRES={text}: each entry needs hres_name and layer_name")
        out.append((str(item["hres_name"]), str(item["layer_name"])))
    return out


def node_join(node: str, pairs: list[tuple[str, str]], *, actor: str = "", now=None) -> bool:
    """Put a new dynamic node in its layers (and so their parents); these are its
    configured layers, kept across reconfigures (``LayerUpdate.keep``).

    An unknown or unsuitable layer (no such resource or layer, a Mode 3 layer that is not
    a leaf, two leaves of one Mode 3 resource) leaves the node in no layer at all and logs
    an error (Slurm's hres.html, "Dynamic Nodes").  Returns whether the node joined.
    """
    if not pairs:
        return True
    state = current_state()
    if node not in state.node_index:
        state = state.reindex((*state.nodes, node))
    config = current_config()
    try:
        seen: set[str] = set()
        for resource, layer in pairs:
            conf = config.resource(resource)
            if conf is None:
                raise ValueError(f"no hierarchical resource {resource}")
            if int(conf.mode) == 3:
                if resource in seen:
                    raise ValueError(f"resource {resource}: only one leaf layer may be given in Mode 3")
                if any(la.parent == layer for la in conf.layers):
                    raise ValueError(f"resource {resource}: layer {layer} is not a leaf layer")
            seen.add(resource)
            state = apply_changes(state, resource, layer, {"nodes": f"+{node}"})
    except ValueError as exc:
        log.error("dynamic node %s created without HRES membership: %s", node, exc)
        return False
    now = now or clock.now()
    for resource, layer in pairs:
        LayerUpdate.objects.create(
            time=now,
            user=actor,
            resource=resource,
            layer=layer,
            changes={"nodes": f"+{node}", "node": node},
            keep=True,
        )
    publish.console_changed(TOPIC)
    return True


def node_leave(node: str) -> None:
    """A dynamic node is deleted: it leaves every layer it was put in, and only it does.

    Its own rows (its configured layers, its saved membership) go; a runtime update that
    listed it with other nodes (``Nodes=+node[33-36]``) is kept for the others, or it would
    no longer replay once the node is gone and they would lose their layers too."""
    LayerUpdate.objects.filter(changes__node=node).delete()
    for up in LayerUpdate.objects.select_for_update().filter(changes__has_key="nodes").order_by("id"):
        changes = persistence.without_node(up.changes, node)
        if changes is None:
            up.delete()
        elif changes != up.changes:
            up.changes = changes
            up.save(update_fields=["changes"])
    publish.console_changed(TOPIC)
