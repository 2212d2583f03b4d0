"""The report rollup cycle: raw history into the hourly and daily tables, then the purge.

Each run rolls the hours that ended since the watermark (``RollupState.rolled_to``), at most
a week of them (a first run over a long history catches up over several runs), and again
the hours a late change touched: a job whose completion (or start) was recorded since the
last run with a time before the watermark.  Rolling an hour deletes its
rows and writes them anew, so running it twice gives the same rows.  The days whose hours
changed are summed again from their hours.

Then, when ``PurgeJobAfter``/``PurgeEventAfter`` are set (FSCHED_PURGE_JOB_AFTER,
FSCHED_PURGE_EVENT_AFTER), the ended jobs and the events older than that and already rolled
up are deleted through cluster.services.purge, as slurmdbd purges at its rollup.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Min, OuterRef, Q, Subquery
from django.utils import timezone

from cluster import clock
from cluster.core import hostlists, states
from cluster.models import ClusterConfig, Event, Job, Node, Partition, Reservation
from cluster.services.purge import records_purge
from load.services import LOAD_REASON
from reports.core import rollup as core
from reports.core.retention import RetentionError, purge_cutoff
from reports.models import (
    AssocUsage,
    ClusterUsage,
    EventCount,
    JobUsage,
    NodeHours,
    Period,
    RollupState,
    Sample,
)
from slurmwords.tres import BillingWeights, TresError, billing, gres_tres, parse_billing_weights

log = logging.getLogger(__name__)

MAX_HOURS_PER_RUN = 24 * 7
MAX_JOB_HOSTS = 100_000
PURGE_ACTOR = "rollup (PurgeJobAfter/PurgeEventAfter)"
HOUR = timedelta(hours=1)


def floor_hour(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_start(t: datetime) -> datetime:
    """The local midnight (settings.TIME_ZONE) that begins ``t``'s day, as slurmdbd's days
    are the controller's local days."""
    local = timezone.localtime(t)
    return local.replace(hour=0, minute=0, second=0, microsecond=0).astimezone(UTC)


def next_day(start: datetime) -> datetime:
    local = timezone.localtime(start) + timedelta(days=1, hours=2)
    return local.replace(hour=0, minute=0, second=0, microsecond=0).astimezone(UTC)


def report_rollup(*, now: datetime | None = None) -> str:
    """One run of the cycle; its summary."""
    now = now or clock.now()
    top = floor_hour(now)
    with transaction.atomic():
        state, _ = RollupState.objects.select_for_update().get_or_create(pk=1)
        if state.rolled_to is None:
            first = _earliest_history()
            state.rolled_to = floor_hour(first) if first else top
        begin = min(state.rolled_to, _late_change(state.last_run, state.rolled_to) or state.rolled_to)
        end = min(top, max(begin, state.rolled_to) + MAX_HOURS_PER_RUN * HOUR)
        if begin < end:
            roll_hours(begin, end)
            roll_days(day_start(begin), end)
            state.rolled_to = max(state.rolled_to, end)
        state.last_run = now
        state.save()
        _sample(floor_hour(now))
    hours = max(0, int((end - begin) / HOUR))
    purged = _purge(now, state.rolled_to)
    return f"rolled {hours} hours to {state.rolled_to:%Y-%m-%dT%H:%M}{purged}"


def _earliest_history() -> datetime | None:
    times = [
        Job.objects.aggregate(t=Min("submit_time"))["t"],
        Event.objects.filter(kind=Event.Kind.NODE).aggregate(t=Min("time"))["t"],
    ]
    found = [t for t in times if t is not None]
    return min(found) if found else None


def _late_change(last_run: datetime | None, rolled_to: datetime) -> datetime | None:
    """The earliest hour before the watermark that a change recorded since the last run
    touches: a job that ended before the watermark (its completion came late: the hours from
    its end counted it as running), or started before it (the hours from its start counted it
    as pending).  A long job ending now changes no rolled hour."""
    if last_run is None:
        return None
    recent = Event.objects.filter(kind=Event.Kind.JOB, time__gte=last_run)
    ended = Job.objects.filter(id__in=recent.values("job_id"), end_time__lt=rolled_to).aggregate(
        t=Min("end_time")
    )
    started = Job.objects.filter(
        id__in=recent.filter(new_state="RUNNING").values("job_id"), start_time__lt=rolled_to
    ).aggregate(t=Min("start_time"))
    found = [t for t in (ended["t"], started["t"]) if t is not None]
    return floor_hour(min(found)) if found else None


# ---------------------------------------------------------------------------- reading


def _node_changes():
    # A power request's own record names the request (detail.power_request), not a state.
    return Event.objects.filter(kind=Event.Kind.NODE).exclude(detail__has_key="power_request")


def _nodes_and_segments(begin: datetime, end: datetime) -> tuple[list[core.NodeInfo], dict]:
    before = _node_changes().filter(node=OuterRef("name"), time__lt=begin).order_by("-time", "-id")
    after = _node_changes().filter(node=OuterRef("name"), time__gte=begin).exclude(old_state="")
    rows = Node.objects.annotate(
        before=Subquery(before.values("new_state")[:1]),
        after=Subquery(after.order_by("time", "id").values("old_state")[:1]),
    ).values_list("name", "cpus", "real_memory", "base_state", "flags", "before", "after")
    nodes, initial = [], {}
    for name, cpus, mem, base, flags, was, then in rows:
        nodes.append(core.NodeInfo(name, cpus, mem))
        initial[name] = was or then or states.long_state(base, flags)
    changes = [
        (t.timestamp(), node, new)
        for t, node, new in _node_changes()
        .filter(time__gte=begin, time__lt=end, node__in=initial)
        .order_by("time", "id")
        .values_list("time", "node", "new_state")
    ]
    return nodes, core.node_segments(initial, changes, begin.timestamp(), end.timestamp())


def _weights() -> dict[str, BillingWeights]:
    cfg = ClusterConfig.objects.first()
    max_tres = bool(cfg) and "MAX_TRES" in str(cfg.options.get("PriorityFlags", "")).upper()
    out = {}
    for name, extra in Partition.objects.values_list("name", "extra"):
        text = str((extra or {}).get("TRESBillingWeights", ""))
        try:
            out[name] = parse_billing_weights(text, max_tres=max_tres)
        except TresError:
            out[name] = BillingWeights()
    return out


def _jobs(begin: datetime, end: datetime) -> list[core.JobSpan]:
    weights = _weights()
    rows = (
        Job.objects.filter(submit_time__lt=end)
        .filter(Q(end_time__isnull=True) | Q(end_time__gte=begin))
        .values_list(
            "id",
            "account",
            "user",
            "partition",
            "num_tasks",
            "cpus_per_task",
            "alloc",
            "node_list",
            "min_nodes",
            "mem_per_node",
            "gres",
            "eligible_time",
            "start_time",
            "end_time",
            "reservation",
            "hold",
        )
        .iterator(chunk_size=2000)
    )
    out = []
    for (jid, account, user, part, tasks, cpt, alloc, node_list, min_nodes, mem_per_node, gres,
         eligible, start, stop, resv, hold) in rows:  # fmt: skip
        try:
            hosts = (
                tuple(alloc) or tuple(hostlists.expand(node_list, limit=MAX_JOB_HOSTS))
                if node_list or alloc
                else ()
            )
        except hostlists.HostlistError:
            hosts = ()
        nodes = len(hosts) or min_nodes
        cpus = sum(v[0] for v in alloc.values()) if alloc else tasks * cpt
        mem = sum(v[1] for v in alloc.values()) if alloc else (mem_per_node or 0) * nodes
        try:
            per_node = gres_tres(gres or "")
        except TresError:
            per_node = {}
        tres = {"cpu": cpus, "mem": mem, "node": nodes, **{k: v * nodes for k, v in per_node.items()}}
        # A held job is not eligible, so it plans nothing (Slurm's eligible time); nor does
        # one waiting on a dependency (no eligible time yet).
        since = None if (hold and start is None) else (eligible or start)
        out.append(
            core.JobSpan(
                id=jid, account=account, user=user, cpus=cpus, mem=mem, nodes=nodes,
                billing=billing(tres, weights.get(part), nodes=nodes),
                gpus=int(tres.get("gres/gpu", 0)),
                eligible=since.timestamp() if since else float("inf"),
                start=start.timestamp() if start else None,
                end=stop.timestamp() if stop else None,
                reservation=resv,
                hosts=hosts,
            )
        )  # fmt: skip
    return out


def _reservations(begin: datetime, end: datetime, nodes: list[core.NodeInfo]) -> list[core.ResvSpan]:
    size = {n.name: n for n in nodes}
    out = []
    for name, t0, t1, expr, flags in Reservation.objects.filter(
        start_time__lt=end, end_time__gt=begin
    ).values_list("name", "start_time", "end_time", "nodes", "flags"):
        words = {w.strip().upper() for w in flags.split(",")}
        if "IGNORE_JOBS" in words or not expr:
            continue
        held = [size[n] for n in hostlists.expand(expr, limit=len(size) + 1) if n in size]
        out.append(
            core.ResvSpan(
                name, t0.timestamp(), t1.timestamp(), sum(n.cpus for n in held), sum(n.mem for n in held),
                len(held), maint="MAINT" in words,
            )
        )  # fmt: skip
    return out


# ---------------------------------------------------------------------------- writing


def roll_hours(begin: datetime, end: datetime) -> None:
    """Write the hour rows of ``[begin, end)`` anew (whole hours)."""
    nodes, segments = _nodes_and_segments(begin, end)
    jobs = _jobs(begin, end)
    resvs = _reservations(begin, end, nodes)
    hours = []
    t = begin
    while t < end:
        hours.append(t)
        t += HOUR
    ClusterUsage.objects.filter(period=Period.HOUR, start__gte=begin, start__lt=end).delete()
    AssocUsage.objects.filter(period=Period.HOUR, start__gte=begin, start__lt=end).delete()
    JobUsage.objects.filter(period=Period.HOUR, start__gte=begin, start__lt=end).delete()
    cluster_rows, assoc_rows, job_rows = [], [], []
    for hour in hours:
        h0 = hour.timestamp()
        mine = [
            j
            for j in jobs
            if j.eligible < h0 + core.HOUR or (j.start is not None and j.start < h0 + core.HOUR)
        ]
        figures = core.roll_hour(h0, nodes, segments, mine, resvs)
        for tres, c in figures.cluster.items():
            cluster_rows.append(
                ClusterUsage(
                    period=Period.HOUR, start=hour, tres=tres, count=c.count, alloc_secs=c.alloc,
                    down_secs=c.down, pdown_secs=c.pdown, plan_secs=c.plan, idle_secs=c.idle,
                    resv_secs=c.resv, over_secs=c.over,
                )
            )  # fmt: skip
        for (account, user), a in figures.assocs.items():
            assoc_rows.append(
                AssocUsage(
                    period=Period.HOUR, start=hour, account=account, user=user, cpu_secs=a.cpu,
                    mem_secs=a.mem, node_secs=a.node, billing_secs=a.billing, gpu_secs=a.gpu,
                )
            )  # fmt: skip
        for (account, user, cpus), s in figures.jobs.items():
            job_rows.append(
                JobUsage(
                    period=Period.HOUR, start=hour, account=account, user=user, cpus=cpus,
                    started=s.started, ended=s.ended, cpu_secs=s.cpu_secs, wait_secs=s.wait_secs,
                    run_secs=s.run_secs, wait_hist=s.wait_hist, run_hist=s.run_hist,
                )
            )  # fmt: skip
    NodeHours.objects.filter(period=Period.HOUR, start__gte=begin, start__lt=end).delete()
    NodeHours.objects.bulk_create(_node_hours(hours, segments), batch_size=1000)
    ClusterUsage.objects.bulk_create(cluster_rows, batch_size=1000)
    AssocUsage.objects.bulk_create(assoc_rows, batch_size=1000)
    JobUsage.objects.bulk_create(job_rows, batch_size=1000)
    _count_events(begin, end)


def _node_hours(hours: list[datetime], segments: dict) -> list[NodeHours]:
    out = []
    for hour in hours:
        h0 = hour.timestamp()
        for node, segs in segments.items():
            secs = {"down": 0.0, "pdown": 0.0}
            for a, b, category in segs:
                if category in secs:
                    secs[category] += core.overlap(a, b, h0, h0 + core.HOUR)
            if secs["down"] or secs["pdown"]:
                out.append(
                    NodeHours(
                        period=Period.HOUR,
                        start=hour,
                        node=node,
                        down_secs=secs["down"],
                        pdown_secs=secs["pdown"],
                    )
                )
    return out


def _count_events(begin: datetime, end: datetime) -> None:
    """The load check's drains (a node entering DRAIN with a ``Load:`` reason) and stops (a
    job entering STOPPED, which only the load check does), per hour."""
    EventCount.objects.filter(period=Period.HOUR, start__gte=begin, start__lt=end).delete()
    counts: dict[tuple[datetime, str, str], int] = defaultdict(int)
    drains = Event.objects.filter(
        kind=Event.Kind.NODE,
        time__gte=begin,
        time__lt=end,
        reason__startswith=LOAD_REASON,
        new_state__contains="DRAIN",
    ).exclude(old_state__contains="DRAIN")
    for t, node in drains.values_list("time", "node"):
        counts[(floor_hour(t), "load_drain", node)] += 1
    stops = Event.objects.filter(kind=Event.Kind.JOB, time__gte=begin, time__lt=end, new_state="STOPPED")
    users = dict(Job.objects.filter(id__in=stops.values("job_id")).values_list("id", "user"))
    for t, job_id in stops.values_list("time", "job_id"):
        counts[(floor_hour(t), "load_stop", users.get(job_id, ""))] += 1
    EventCount.objects.bulk_create(
        EventCount(period=Period.HOUR, start=t, what=what, name=name, count=n)
        for (t, what, name), n in counts.items()
    )


def roll_days(begin: datetime, end: datetime) -> None:
    """Sum the hour rows of every local day from ``begin`` that is whole before ``end``."""
    day = begin
    while next_day(day) <= end:
        _roll_day(day, next_day(day))
        day = next_day(day)


def _sum_into(target: dict, key: tuple, values: Iterable[tuple[str, float]]) -> None:
    row = target.setdefault(key, defaultdict(float))
    for name, value in values:
        row[name] += value


def _roll_day(begin: datetime, end: datetime) -> None:
    hours = {"period": Period.HOUR, "start__gte": begin, "start__lt": end}
    ClusterUsage.objects.filter(period=Period.DAY, start=begin).delete()
    AssocUsage.objects.filter(period=Period.DAY, start=begin).delete()
    JobUsage.objects.filter(period=Period.DAY, start=begin).delete()
    cluster: dict = {}
    secs = ("alloc_secs", "down_secs", "pdown_secs", "plan_secs", "idle_secs", "resv_secs", "over_secs")
    for row in ClusterUsage.objects.filter(**hours).values("tres", "count", *secs):
        _sum_into(cluster, (row["tres"],), [(f, row[f]) for f in ("count", *secs)] + [("hours", 1)])
    # A day's count is the mean of its hours' (the hours there are records for).
    ClusterUsage.objects.bulk_create(
        ClusterUsage(
            period=Period.DAY, start=begin, tres=tres, count=round(v.pop("count") / v.pop("hours")), **v
        )
        for (tres,), v in cluster.items()
    )
    assoc: dict = {}
    fields = ("cpu_secs", "mem_secs", "node_secs", "billing_secs", "gpu_secs")
    for row in AssocUsage.objects.filter(**hours).values("account", "user", *fields):
        _sum_into(assoc, (row["account"], row["user"]), [(f, row[f]) for f in fields])
    AssocUsage.objects.bulk_create(
        AssocUsage(period=Period.DAY, start=begin, account=a, user=u, **v) for (a, u), v in assoc.items()
    )
    events: dict = {}
    for row in EventCount.objects.filter(**hours).values("what", "name", "count"):
        _sum_into(events, (row["what"], row["name"]), [("count", row["count"])])
    EventCount.objects.filter(period=Period.DAY, start=begin).delete()
    EventCount.objects.bulk_create(
        EventCount(period=Period.DAY, start=begin, what=w, name=n, count=int(v["count"]))
        for (w, n), v in events.items()
    )
    per_node: dict = {}
    for row in NodeHours.objects.filter(**hours).values("node", "down_secs", "pdown_secs"):
        _sum_into(
            per_node, (row["node"],), [("down_secs", row["down_secs"]), ("pdown_secs", row["pdown_secs"])]
        )
    NodeHours.objects.filter(period=Period.DAY, start=begin).delete()
    NodeHours.objects.bulk_create(
        NodeHours(period=Period.DAY, start=begin, node=n, **v) for (n,), v in per_node.items()
    )
    samples: dict = {}
    for row in Sample.objects.filter(**hours).values("kind", "name", "value", "total"):
        _sum_into(
            samples, (row["kind"], row["name"]), [("value", row["value"]), ("total", row["total"]), ("n", 1)]
        )
    Sample.objects.filter(period=Period.DAY, start=begin).delete()
    Sample.objects.bulk_create(
        Sample(
            period=Period.DAY,
            start=begin,
            kind=k,
            name=n,
            value=v["value"] / v["n"],
            total=v["total"] / v["n"],
        )
        for (k, n), v in samples.items()
    )
    jobs: dict = {}
    hists: dict = {}
    fields = ("started", "ended", "cpu_secs", "wait_secs", "run_secs")
    for row in JobUsage.objects.filter(**hours).values(
        "account", "user", "cpus", *fields, "wait_hist", "run_hist"
    ):
        key = (row["account"], row["user"], row["cpus"])
        _sum_into(jobs, key, [(f, row[f]) for f in fields])
        h = hists.setdefault(
            key, {"wait_hist": [0] * len(core.DURATION_LABELS), "run_hist": [0] * len(core.DURATION_LABELS)}
        )
        for name in ("wait_hist", "run_hist"):
            h[name] = [a + b for a, b in zip(h[name], row[name], strict=False)]
    JobUsage.objects.bulk_create(
        JobUsage(
            period=Period.DAY, start=begin, account=a, user=u, cpus=c,
            started=int(v["started"]), ended=int(v["ended"]), cpu_secs=v["cpu_secs"],
            wait_secs=v["wait_secs"], run_secs=v["run_secs"], **hists[(a, u, c)],
        )
        for (a, u, c), v in jobs.items()
    )  # fmt: skip


# ---------------------------------------------------------------------------- samples


def _sample(hour: datetime) -> None:
    """This hour's samples, replacing an earlier run's in the same hour: each HRES layer's
    use, and the pending jobs per reason (which the raw rows keep only for now)."""
    figures: dict[tuple[str, str], tuple[float, float]] = {
        ("pending", reason): (n, 0)
        for reason, n in Job.objects.filter(state="PENDING")
        .values_list("reason")
        .annotate(n=Count("id"))
        .values_list("reason", "n")
    }
    for entry in _hres_layers():
        if entry.get("total") is None:
            continue  # an infinite layer has no share in use
        name = f"{entry['license_name']}:{entry['layer_name']}"[:128]
        figures[("hres", name)] = (entry["used"], entry["total"])
    store_samples(hour, figures)


def store_samples(hour: datetime, figures: dict[tuple[str, str], tuple[float, float]]) -> None:
    """The hour's samples made ``figures`` ((kind, name) -> (value, total)): the rollup
    runs several times an hour and most figures are as the last run left them, so only
    those that changed are written, the others' rows left alone."""
    have = {
        (kind, name): (pk, value, total)
        for pk, kind, name, value, total in Sample.objects.filter(period=Period.HOUR, start=hour).values_list(
            "pk", "kind", "name", "value", "total"
        )
    }
    gone = [pk for key, (pk, _v, _t) in have.items() if key not in figures]
    if gone:
        Sample.objects.filter(pk__in=gone).delete()
    changed, new = [], []
    for (kind, name), (value, total) in figures.items():
        found = have.get((kind, name))
        if found is None:
            new.append(Sample(period=Period.HOUR, start=hour, kind=kind, name=name, value=value, total=total))
        elif (found[1], found[2]) != (value, total):
            changed.append(Sample(pk=found[0], value=value, total=total))
    if changed:
        Sample.objects.bulk_update(changed, ["value", "total"])
    if new:
        Sample.objects.bulk_create(new)


def _hres_layers() -> list[dict]:
    if "hres" not in settings.FSCHED_EXTENSIONS:
        return []
    from hres.services import license_entries  # noqa: PLC0415 - only with the hres extension

    return [e for e in license_entries() if e.get("hres")]


# ---------------------------------------------------------------------------- purge


def _purge(now: datetime, rolled_to: datetime) -> str:
    """Delete what PurgeJobAfter/PurgeEventAfter let go, never what is not rolled up yet."""
    try:
        jobs = purge_cutoff(settings.FSCHED_PURGE_JOB_AFTER, now, name="PurgeJobAfter")
        events = purge_cutoff(settings.FSCHED_PURGE_EVENT_AFTER, now, name="PurgeEventAfter")
    except RetentionError as exc:
        log.error("report rollup: %s; nothing purged", exc)
        return f"; not purged: {exc}"
    if jobs is None and events is None:
        return ""

    def days(cutoff: datetime | None) -> float | None:
        return None if cutoff is None else (now - min(cutoff, rolled_to)).total_seconds() / 86400

    ages = {"events_days": days(events), "jobs_days": days(jobs), "submit_key_days": None, "now": now}
    # Counted first: a purge records itself, and a run that deletes nothing records nothing.
    due = records_purge(actor=PURGE_ACTOR, dry_run=True, **ages)
    if not (due.events or due.jobs):
        return ""
    result = records_purge(actor=PURGE_ACTOR, **ages)
    return f"; purged {result.jobs} jobs, {result.events} events"
