"""sdiag's figures: the scheduler passes' counters and the jobs' since the last reset.

The passes run in the embedded cycle thread or in Celery workers on several machines, so
their counters live in one database row (cluster.models.SchedulerStats) that each pass
adds itself to with a single UPDATE.  The job counters are not counted at all: they are
read from the job history (cluster.models.Event) since the reset, which every
submission, start and end writes anyway, so they cost the hot paths nothing.

As Slurm's sdiag says, "Values are reset at midnight UTC time by default": a pass that
finds the row from an earlier day starts it again (in the same UPDATE), and a read of an
earlier day's row shows it started at midnight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection
from django.db.models import Count

from cluster import clock
from cluster.core.states import HOLDING_JOB_STATES, JobState
from cluster.models import Event, Job, SchedulerStats

_ROW = 1
# The counters each kind of pass owns; a pass that starts a new day zeroes the others'.
_MAIN = ("main_cycles", "main_last_us", "main_max_us", "main_sum_us", "main_depth_sum")
_BACKFILL = (
    "bf_cycles",
    "bf_last_us",
    "bf_max_us",
    "bf_sum_us",
    "bf_last_depth",
    "bf_depth_sum",
    "bf_last_depth_try",
    "bf_depth_try_sum",
    "bf_queue_len",
    "bf_queue_len_sum",
    "bf_backfilled_jobs",
)
STARTED = (JobState.RUNNING, JobState.CONFIGURING)
# sdiag's "Jobs completed": jobs whose run ended on their nodes, whatever their exit;
# "Jobs failed": those lost to a node or agent failure (Slurm: "due to slurmd or other
# internal issues"); "Jobs canceled": scancel and the like.
COMPLETED = (JobState.COMPLETED, JobState.FAILED, JobState.OUT_OF_MEMORY, JobState.TIMEOUT)
FAILED = (JobState.NODE_FAIL, JobState.BOOT_FAIL)
CANCELED = (JobState.CANCELLED,)


@dataclass(frozen=True)
class PassFigures:
    """What one pass adds: its run time, the jobs it examined (its depth, which is the
    whole queue it read: every job read is given a start or a reason), the jobs its
    backfill started ahead of their turn and those backfill tried to place."""

    elapsed_us: int
    depth: int
    backfilled: int = 0
    tried: int = 0


def midnight(now: datetime) -> datetime:
    day = now.astimezone(UTC)
    return day.replace(hour=0, minute=0, second=0, microsecond=0)


def _row(since: datetime) -> SchedulerStats:
    row, _ = SchedulerStats.objects.get_or_create(pk=_ROW, defaults={"since": since})
    return row


def record_pass(figures: PassFigures, *, backfill: bool, now: datetime | None = None) -> None:
    """Add one pass to the counters: one UPDATE (an INSERT once, the first time ever).

    Every counter is computed from the row's own values inside the statement (never read
    and written back), so passes of several processes add up.  The statement is written
    here from the model's columns, not through the ORM: compiling thirty CASE expressions
    cost ~20-30 ms a pass, the statement itself well under a millisecond."""
    now = now or clock.now()
    sql, params = _pass_update(figures, backfill=backfill, now=now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        counted = cursor.rowcount
    if not counted:
        _row(midnight(now))  # never reset: the figures of the day, as a read shows them
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


def _pass_update(figures: PassFigures, *, backfill: bool, now: datetime) -> tuple[str, list[object]]:
    """The UPDATE of :func:`record_pass`: a row of an earlier day (``since`` before today's
    midnight) starts again with this pass, the others' counters zeroed."""
    meta = SchedulerStats._meta
    quote = connection.ops.quote_name
    day = meta.get_field("since").get_db_prep_value(midnight(now), connection)
    sets: list[str] = []
    params: list[object] = []

    def col(name: str) -> str:
        return quote(meta.get_field(name).column)

    def fresh_or_add(name: str, value: int) -> None:
        # A new day: the pass's own value; else the counter plus it.
        sets.append(f"{col(name)} = CASE WHEN {since} < %s THEN %s ELSE {col(name)} + %s END")
        params.extend((day, value, value))

    def fresh_or_max(name: str, value: int) -> None:
        c = col(name)
        sets.append(f"{c} = CASE WHEN {since} < %s THEN %s WHEN {c} > %s THEN {c} ELSE %s END")
        params.extend((day, value, value, value))

    def plain(name: str, value: object) -> None:
        sets.append(f"{col(name)} = %s")
        params.append(value)

    def fresh_or_keep(name: str, value: object) -> None:
        if value is None:  # a literal NULL: a NULL parameter has no type for PostgreSQL to infer
            sets.append(f"{col(name)} = CASE WHEN {since} < %s THEN NULL ELSE {col(name)} END")
            params.append(day)
            return
        sets.append(f"{col(name)} = CASE WHEN {since} < %s THEN %s ELSE {col(name)} END")
        params.extend((day, value))

    since = col("since")
    us, depth, tried, backfilled = figures.elapsed_us, figures.depth, figures.tried, figures.backfilled
    if backfill:
        fresh_or_add("bf_cycles", 1)
        plain("bf_last_us", us)
        fresh_or_max("bf_max_us", us)
        fresh_or_add("bf_sum_us", us)
        plain("bf_last_depth", depth)
        fresh_or_add("bf_depth_sum", depth)
        plain("bf_last_depth_try", tried)
        fresh_or_add("bf_depth_try_sum", tried)
        plain("bf_queue_len", depth)
        fresh_or_add("bf_queue_len_sum", depth)
        fresh_or_add("bf_backfilled_jobs", backfilled)
        plain("bf_last_when", meta.get_field("bf_last_when").get_db_prep_value(now, connection))
        others = _MAIN
    else:
        fresh_or_add("main_cycles", 1)
        plain("main_last_us", us)
        plain("main_last_when", meta.get_field("main_last_when").get_db_prep_value(now, connection))
        fresh_or_max("main_max_us", us)
        fresh_or_add("main_sum_us", us)
        fresh_or_add("main_depth_sum", depth)
        others = _BACKFILL
        fresh_or_keep("bf_last_when", None)
    for name in others:
        fresh_or_keep(name, 0)
    # Last, though every expression reads the row as it was before the statement.
    fresh_or_keep("since", day)
    table = quote(meta.db_table)
    sql = f"UPDATE {table} SET {', '.join(sets)} WHERE {quote(meta.pk.column)} = %s"  # noqa: S608 - columns from the model
    params.append(_ROW)
    return sql, params


# Pending for these, a job is not in the queue slurmctld's passes build, so no pass weighs
# it (build_job_queue leaves out held, dependent and not yet eligible jobs).
_NOT_QUEUED = frozenset(
    {"JobHeldUser", "JobHeldAdmin", "Dependency", "DependencyNeverSatisfied", "BeginTime"}
)


def last_sched_eval(
    last_pass: datetime | None, *, reason: str | None, held: bool, submitted: datetime | None
) -> datetime | None:
    """A pending job's LastSchedEval: the last pass's time when that pass weighed it (a job
    submitted before it, in the passes' queue), else None (Unknown)."""
    if last_pass is None or held or reason in _NOT_QUEUED or submitted is None:
        return None
    return last_pass if submitted <= last_pass else None


def last_pass_time() -> datetime | None:
    """When the last scheduler pass, main or backfill, ran (None: none yet)."""
    row = SchedulerStats.objects.filter(pk=_ROW).values_list("main_last_when", "bf_last_when").first()
    times = [t for t in row or () if t is not None]
    return max(times) if times else None


def reset(*, now: datetime | None = None) -> datetime:
    """sdiag --reset: every counter to 0, the figures counted from now."""
    now = now or clock.now()
    zeros = {name: 0 for name in (*_MAIN, *_BACKFILL)}
    if not SchedulerStats.objects.filter(pk=_ROW).update(since=now, bf_last_when=None, **zeros):
        _row(now)
    return now


def _job_counts(since: datetime) -> dict[str, int]:
    """The jobs submitted, started and ended since ``since``, from their history."""
    rows = (
        Event.objects.filter(kind=Event.Kind.JOB, time__gte=since)
        .values("old_state", "new_state")
        .annotate(n=Count("id"))
        .order_by()
    )
    out = dict.fromkeys(("submitted", "started", "completed", "canceled", "failed"), 0)
    for row in rows:
        old, new, n = row["old_state"], row["new_state"], row["n"]
        if old == "" and new == JobState.PENDING:
            out["submitted"] += n
        elif old == JobState.PENDING and new in STARTED:
            out["started"] += n
        elif old != new and new in COMPLETED:
            out["completed"] += n
        elif old != new and new in CANCELED:
            out["canceled"] += n
        elif old != new and new in FAILED:
            out["failed"] += n
    return out


def agent_queue() -> int:
    """Requests sent to node agents and not yet answered: launches not reported started,
    and cancels of jobs still holding their nodes (what launch_watch times out).  The
    nearest fsched has to Slurm's agent retry list."""
    launches = Job.objects.filter(state=JobState.RUNNING, launched=False, kill_requested__isnull=True)
    cancels = Job.objects.filter(
        state__in=[s.value for s in HOLDING_JOB_STATES], kill_requested__isnull=False
    )
    return launches.count() + cancels.count()


def _gettimeofday_latency() -> int:
    """Microseconds for 1000 reads of the clock, as sdiag reports (once per process, as
    Slurm measures it once at the controller's start)."""
    start = time.perf_counter()
    for _ in range(1000):
        time.time()
    return round((time.perf_counter() - start) * 1e6)


_latency: int | None = None


def statistics(*, server_threads: int, now: datetime | None = None) -> dict[str, object]:
    """Everything ``fsched sdiag`` prints, as the API returns it (docs/api.md)."""
    global _latency  # noqa: PLW0603 - measured once per process
    now = now or clock.now()
    row = SchedulerStats.objects.filter(pk=_ROW).first()
    if row is None:
        # Never a pass nor a reset: the figures start at the day's midnight, empty.
        row = SchedulerStats(since=midnight(now))
    elif row.since < midnight(now):
        row = SchedulerStats(since=midnight(now))
    if _latency is None:
        _latency = _gettimeofday_latency()
    states = dict(
        Job.objects.filter(state__in=[JobState.PENDING, JobState.RUNNING, JobState.CONFIGURING])
        .values_list("state")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {
        "req_time": now,
        "req_time_start": row.since,
        "server_thread_count": server_threads,
        "agent_queue_size": agent_queue(),
        "dbd_agent_queue_size": 0,
        "jobs": _job_counts(row.since),
        "job_states_ts": now,
        "jobs_pending": states.get(JobState.PENDING, 0),
        "jobs_running": states.get(JobState.RUNNING, 0) + states.get(JobState.CONFIGURING, 0),
        "schedule": {
            "cycle_last": row.main_last_us,
            "cycle_max": row.main_max_us,
            "cycle_counter": row.main_cycles,
            "cycle_sum": row.main_sum_us,
            "cycle_depth": row.main_depth_sum,
        },
        "backfill": {
            "backfilled_jobs": row.bf_backfilled_jobs,
            "backfilled_het_jobs": 0,
            "cycle_counter": row.bf_cycles,
            "last_cycle_when": row.bf_last_when,
            "cycle_last": row.bf_last_us,
            "cycle_max": row.bf_max_us,
            "cycle_sum": row.bf_sum_us,
            "last_depth": row.bf_last_depth,
            "last_depth_try": row.bf_last_depth_try,
            "depth_sum": row.bf_depth_sum,
            "depth_try_sum": row.bf_depth_try_sum,
            "queue_len": row.bf_queue_len,
            "queue_len_sum": row.bf_queue_len_sum,
        },
        "gettimeofday_latency": _latency,
    }
