"""Advanced reservations: ``scontrol create|update|delete|show reservation``.

One service behind the CLI (through the REST API) and any other caller: values arrive as
``scontrol`` spells them (``StartTime=now``, ``Duration=2:00:00``, ``Nodes=node[01-04]``,
``Users=alice,bob``, ``licenses=natural(low1):30``), are checked here, stored in
:class:`cluster.models.Reservation` and audited as config Events with before/after.  The
scheduler side is the pure :mod:`cluster.core.reservations` (nodes and access) and the HRES
state (reserved layer amounts, ``hres.services.with_active_reservations``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ClusterShell.NodeSet import NodeSet
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from cluster import clock, extensions, publish, triggers
from cluster.core import hostlists
from cluster.core.reservations import AccessList, ReservationView, maintenance_nodes, parse_flags
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeFlag
from cluster.models import ClusterConfig, Event, Job, Node, Partition, Reservation
from cluster.services import inputs, pass_snapshot, rows
from cluster.services.errors import NotFound, PermissionDenied, ServiceError
from cluster.services.state import sync_node_flag
from slurmwords.begin_time import parse_begin_time
from slurmwords.durations import parse_time_limit
from slurmwords.licenses import parse_reservation_licenses

TOPIC = "reservations"
# Slurm gives a reservation without an end a year (Duration=UNLIMITED).
UNLIMITED = timedelta(days=365)
FIELDS = (
    "name",
    "start_time",
    "end_time",
    "duration",
    "nodes",
    "users",
    "accounts",
    "partition",
    "flags",
    "licenses",
)
# The longest value of each field (the column's length; times and durations are short words).
_LENGTHS = {"users": 1024, "accounts": 1024, "flags": 512, "licenses": 1024, "nodes": hostlists.MAX_TEXT}
_NUMBERS = frozenset({"duration", "start_time", "end_time"})
_TIME_FIELDS = {"StartTime": "start_time", "EndTime": "end_time"}
_LICENSE_COUNT = re.compile(r"[0-9]+")


# --------------------------------------------------------------------------- views


def _as_dict(r: Reservation, now: datetime) -> dict[str, Any]:
    nodes = list(NodeSet(r.nodes)) if r.nodes else []
    cores = sum(Node.objects.filter(name__in=nodes).values_list("cpus", flat=True)) if nodes else 0
    return {
        "name": r.name,
        "start_time": r.start_time.isoformat(),
        "end_time": r.end_time.isoformat(),
        "duration": int((r.end_time - r.start_time).total_seconds()),
        "nodes": r.nodes,
        "node_count": len(nodes),
        "core_count": cores,
        "partition": r.partition,
        "flags": [f for f in r.flags.split(",") if f],
        "users": r.users,
        "accounts": r.accounts,
        "licenses": r.licenses,
        "state": "ACTIVE" if r.start_time <= now < r.end_time else "INACTIVE",
        "created_by": r.created_by,
    }


def reservation_list(name: str | None = None, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """``scontrol show reservation [NAME]``; NotFound for an unknown name."""
    now = now or clock.now()
    found = Reservation.objects.order_by("start_time", "name")
    if name:
        found = found.filter(name=name)
        if not found.exists():
            raise NotFound(f"Reservation {name} not found")
    return [_as_dict(r, now) for r in found]


def view_of(r: Reservation) -> ReservationView:
    return _view(tuple(getattr(r, f) for f in _VIEW_FIELDS))


_VIEW_FIELDS = ("name", "start_time", "end_time", "nodes", "users", "accounts", "flags", "partition")


def _view(row: tuple[Any, ...]) -> ReservationView:
    """The view of a reservation's ``_VIEW_FIELDS``."""
    name, start, end, nodes, users, accounts, flags, partition = row
    return ReservationView(
        name=name,
        start=start.timestamp(),
        end=end.timestamp(),
        nodes=frozenset(NodeSet(nodes)) if nodes else frozenset(),
        users=AccessList.parse(users),
        accounts=AccessList.parse(accounts, "accounts"),
        flags=frozenset(f for f in flags.split(",") if f),
        partition=partition,
    )


def pass_views(now: datetime) -> list[ReservationView]:
    """The reservations a scheduler pass must know: those not ended yet (a future one
    keeps jobs that would run into it off its nodes)."""
    return [view for end, view in _kept_views() if end > now]


def _kept_views() -> list[tuple[datetime, ReservationView]]:
    """Every reservation's end and view, in the table's order: kept between passes until
    the table is written (every pass read it, and parsed its node lists again)."""
    return pass_snapshot.kept_value("reservations.views", (Reservation,), _read_views)


def _read_views() -> list[tuple[datetime, ReservationView]]:
    # A plain statement, not a queryset compiled each time (rows).
    return [(row[2], _view(row)) for row in rows.select(Reservation, _VIEW_FIELDS, order_by=_ORDER)]


_ORDER = tuple(Reservation._meta.ordering)


def maintenance_sync(*, now: datetime | None = None) -> list[str]:
    """MAINTENANCE on the nodes of the active MAINT reservations and on no other node, as
    Slurm keeps it (sinfo's ``$``): run when a reservation changes, and by the
    ``maintenance`` cycle for those that begin or end with time. The nodes that changed."""
    now = now or clock.now()
    active = Reservation.objects.filter(start_time__lte=now, end_time__gt=now, flags__contains="MAINT")
    wanted = maintenance_nodes([view_of(r) for r in active], now.timestamp())
    return sync_node_flag(NodeFlag.MAINTENANCE, wanted, now=now)


def pending_accounts() -> dict[int, str]:
    """job id -> account of the pending jobs asking for a reservation."""
    where = {"state": JobState.PENDING, "reservation": rows.Not("")}
    return dict(rows.select(Job, ("id", "account"), where))


def check_job_access(name: str, user: str, account: str) -> None:
    """Submit and ``scontrol update job`` rule: the reservation exists and lets the job in."""
    r = Reservation.objects.filter(name=name).first()
    if r is None:
        raise ServiceError("Requested reservation is invalid", field="reservation")
    if not view_of(r).admits(user, account):
        raise ServiceError("Access denied to requested reservation", field="reservation")


# --------------------------------------------------------------------------- parsing


def _given(values: Mapping[str, Any], key: str) -> str:
    """A field's text ("" when absent); a number is taken for times and durations."""
    value = values.get(key)
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool) and key in _NUMBERS:
        value = str(value)
    return inputs.text(value, key, max_length=_LENGTHS.get(key, inputs.NAME_MAX)).strip()


def _time(text: str, now: datetime, key: str) -> datetime:
    try:
        return parse_begin_time(text, timezone.localtime(now))
    except (ValueError, OverflowError):
        raise ServiceError(f"Invalid {key} specification: {text}", field=_TIME_FIELDS[key]) from None


def _window(values: Mapping[str, Any], now: datetime, old: Reservation | None) -> tuple[datetime, datetime]:
    start_text, end_text, duration = (_given(values, k) for k in ("start_time", "end_time", "duration"))
    start = _time(start_text, now, "StartTime") if start_text else None
    if start is None:
        start = old.start_time if old else now.replace(microsecond=0)
    end = None
    if end_text:
        end = _time(end_text, now, "EndTime")
    elif duration:
        try:
            minutes = parse_time_limit(duration)
        except (ValueError, OverflowError):
            minutes = -1
        if minutes is not None and not 0 <= minutes <= inputs.INT_MAX:
            raise ServiceError(f"Invalid Duration specification: {duration}", field="duration")
        end = start + (UNLIMITED if minutes is None else timedelta(minutes=minutes))
    elif old is not None:
        # A new StartTime keeps the duration, as Slurm's update does.
        end = start + (old.end_time - old.start_time)
    else:
        end = start + UNLIMITED
    if end <= start:
        raise ServiceError("Reservation request has invalid times (EndTime must follow StartTime)")
    return start, end


def _bounded_window(
    values: Mapping[str, Any], now: datetime, old: Reservation | None
) -> tuple[datetime, datetime]:
    """:func:`_window`, refusing a window that runs past what a date can hold (year 9999)."""
    try:
        return _window(values, now, old)
    except OverflowError:
        raise ServiceError("Reservation request has invalid times (out of range)", field="end_time") from None


def _nodes(text: str) -> str:
    if not text:
        return ""
    known = list(Node.objects.order_by("name").values_list("name", flat=True))
    if text.upper() == "ALL":
        return str(NodeSet.fromlist(known))
    names = inputs.hostlist(text, "nodes", limit=max(len(known), 1))
    missing = sorted(set(names) - set(known))
    if missing:
        raise ServiceError(f"Invalid node name specified: {NodeSet.fromlist(missing)}", field="nodes")
    return str(NodeSet.fromlist(names))


def _licenses(text: str) -> str:
    if not text:
        return ""
    if any(len(n) > 10 or int(n) > inputs.INT_MAX for n in _LICENSE_COUNT.findall(text)):
        raise ServiceError(
            f"Invalid license specification: {text[:64]} (count out of range)", field="licenses"
        )
    plain = ClusterConfig.current().licenses
    modes = extensions.license_modes()
    try:
        items = parse_reservation_licenses(text, hres=modes, plain=plain)
    except ValueError as exc:
        raise ServiceError(str(exc), field="licenses") from None
    unknown = [it.name for it in items if it.name not in modes and it.name not in plain]
    if unknown:
        raise ServiceError(f"Invalid license specification: {','.join(unknown)}", field="licenses")
    return text


def _clean(values: Mapping[str, Any], now: datetime, old: Reservation | None) -> dict[str, Any]:
    """The stored fields from what was given (``old``: the row an update starts from)."""
    out: dict[str, Any] = {}
    out["start_time"], out["end_time"] = _bounded_window(values, now, old)
    if "nodes" in values or old is None:
        out["nodes"] = _nodes(_given(values, "nodes"))
    for key, what in (("users", "users"), ("accounts", "accounts")):
        if key in values or old is None:
            text = _given(values, key)
            inputs.names(text, key, max_length=_LENGTHS[key])
            try:
                out[key] = str(AccessList.parse(text, what)) if text else ""
            except ValueError as exc:
                raise ServiceError(str(exc), field=key) from None
    if "flags" in values or old is None:
        try:
            out["flags"] = ",".join(parse_flags(_given(values, "flags")))
        except ValueError as exc:
            raise ServiceError(str(exc), field="flags") from None
    if "partition" in values or old is None:
        part = _given(values, "partition")
        if part and not Partition.objects.filter(name=part).exists():
            raise ServiceError(f"Invalid partition name specified: {part}", field="partition")
        out["partition"] = part
    if "licenses" in values or old is None:
        out["licenses"] = _licenses(_given(values, "licenses"))
    return out


def _merged(old: Reservation | None, changes: Mapping[str, Any], name: str) -> Reservation:
    row = Reservation(name=name) if old is None else Reservation(**{f: getattr(old, f) for f in _MODEL})
    for key, value in changes.items():
        setattr(row, key, value)
    return row


_MODEL = ("id", "name", "start_time", "end_time", "nodes", "users", "accounts", "partition", "flags")
_MODEL += ("licenses", "created_by")


def _check(row: Reservation, now: datetime) -> None:
    """What Slurm checks before it accepts a reservation (created or changed)."""
    if not row.users and not row.accounts:
        raise ServiceError("Either Users or Accounts must be specified")
    if not row.nodes and not row.licenses:
        raise ServiceError("Nodes or Licenses must be specified")
    flags = set(row.flags.split(","))
    names = set(NodeSet(row.nodes)) if row.nodes else set()
    if names and not flags & {"IGNORE_JOBS", "MAINT", "OVERLAP"}:
        # Running jobs that would still hold the nodes at the start (Slurm: nodes busy).
        for job in Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES]).exclude(
            reservation=row.name
        ):
            if not names & set(job.alloc or {}):
                continue
            end = job.start_time + timedelta(minutes=job.time_limit) if job.time_limit else None
            if end is None or end > row.start_time:
                raise ServiceError("Requested nodes are busy")
        for other in Reservation.objects.exclude(name=row.name).filter(
            start_time__lt=row.end_time, end_time__gt=row.start_time
        ):
            if other.nodes and names & set(NodeSet(other.nodes)) and "OVERLAP" not in other.flags:
                raise ServiceError(f"Requested nodes are busy (reserved by {other.name})")
    for ext in extensions.active():
        ext.reservation_check(row, now=now)


def _snapshot(row: Reservation | None, now: datetime) -> dict[str, Any]:
    return _as_dict(row, now) if row is not None else {}


def _audit(what: str, name: str, actor: str, now: datetime, *, before: dict, after: dict) -> None:
    Event.objects.create(
        time=now,
        kind=Event.Kind.CONFIG,
        reason=f"reservation {what}",
        new_state=name,
        user=actor,
        detail={"reservation": name, "before": before, "after": after},
    )
    publish.console_changed(TOPIC)
    triggers.schedule_after_commit()


def _staff(actor: AbstractBaseUser) -> None:
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")


# --------------------------------------------------------------------------- changes


def _next_name(values: Mapping[str, Any]) -> str:
    """Slurm's generated name: the first user (or account) and a number."""
    first = (str(values.get("users") or "") or str(values.get("accounts") or "")).split(",")[0]
    base = first.lstrip("-") or "resv"
    n = 1
    while Reservation.objects.filter(name=f"{base}_{n}").exists():
        n += 1
    return f"{base}_{n}"


@transaction.atomic
def reservation_create(
    *, actor: AbstractBaseUser, values: Mapping[str, Any], now: datetime | None = None
) -> dict[str, Any]:
    """``scontrol create reservation``: ``values`` keyed by :data:`FIELDS`."""
    _staff(actor)
    values = inputs.body_object(values)
    inputs.known_fields(values, FIELDS)
    now = now or clock.now()
    given = _given(values, "name")
    name = inputs.name(given, "name") if given else _next_name(values)
    if Reservation.objects.select_for_update().filter(name=name).exists():
        raise ServiceError("Reservation request has invalid name (already in use)", field="name")
    row = _merged(None, _clean(values, now, None), name)
    row.created_by = actor.get_username()
    _check(row, now)
    row.save()
    after = _snapshot(row, now)
    _audit("create", name, actor.get_username(), now, before={}, after=after)
    maintenance_sync(now=now)
    return after


@transaction.atomic
def reservation_update(
    *, actor: AbstractBaseUser, name: str, values: Mapping[str, Any], now: datetime | None = None
) -> dict[str, Any]:
    """``scontrol update ReservationName=R ...``: only the fields given change."""
    _staff(actor)
    changes = {k: v for k, v in inputs.body_object(values).items() if k != "name"}
    inputs.known_fields(changes, FIELDS)
    if not changes:
        raise ServiceError("No changes specified")
    now = now or clock.now()
    old = Reservation.objects.select_for_update().filter(name=name).first()
    if old is None:
        raise NotFound("Invalid reservation name specified")
    before = _snapshot(old, now)
    row = _merged(old, _clean(changes, now, old), name)
    _check(row, now)
    row.save()
    after = _snapshot(row, now)
    _audit("update", name, actor.get_username(), now, before=before, after=after)
    maintenance_sync(now=now)
    return after


@transaction.atomic
def reservation_delete(*, actor: AbstractBaseUser, name: str, now: datetime | None = None) -> None:
    """``scontrol delete ReservationName=R``.  Pending jobs of it stay, pending with reason
    ``Reservation``; running ones keep going (Slurm)."""
    _staff(actor)
    now = now or clock.now()
    row = Reservation.objects.select_for_update().filter(name=name).first()
    if row is None:
        raise NotFound("Invalid reservation name specified")
    before = _snapshot(row, now)
    row.delete()
    _audit("delete", name, actor.get_username(), now, before=before, after={})
    maintenance_sync(now=now)
