"""What the load check decides for one node, every 30 seconds (fsched's own load thresholds).

* Any ``LoadSched`` threshold crossed (memory below, any other index above) drains the
  node; all satisfied (strictly: memory above, the others below) undrains it, but only a
  drain this check set: an administrator's drain stays.  A value exactly on a threshold
  neither drains nor undrains, so the node keeps its state there.
* Where the node's partition also sets ``LoadStop`` thresholds: any crossed stops the
  node's running jobs one by one, the lowest priority first (at equal priority the latest
  started), until one job is left running.  All ``LoadSched`` satisfied continues the
  stopped jobs, the highest priority first (at equal priority the earliest started).

Safeguards against thrashing, beyond the spec's rules:
1. at most one stop and one continue per node per check, so each action is seen in the
   indices before the next;
2. the stopped jobs are continued before the undrain lets new work in: the node is
   undrained at the check after its last stopped job was continued;
3. no further job is stopped for a run-queue index while the instantaneous run queue is
   already back under its stop threshold (the average is still catching up with the last
   stop);
4. a job is stopped only if it has run through at least one check, so a job that just
   started is not stopped for the load its predecessor left (the check waits for it
   rather than stop a job of higher priority in its place).

Pure: the node's figures and jobs in, decisions out; the caller applies them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from load.core.thresholds import INDICES, Thresholds, lower_is_worse

CHECK_INTERVAL = 30.0  # seconds between checks
RUN_QUEUE_INDICES = ("r15s", "r1m", "r15m")


@dataclass(frozen=True)
class NodeJob:
    job_id: int
    priority: int
    start: float  # when the job started (epoch seconds)
    stopped: bool = False


@dataclass(frozen=True)
class Decision:
    """``action`` is ``drain``, ``undrain``, ``stop`` or ``continue``; ``job_id`` names the
    job stopped or continued; ``reason`` the figures behind it."""

    action: str
    reason: str
    job_id: int | None = None


def _number(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def crossed(indices: Mapping[str, float], table: Mapping[str, float], kind: str) -> list[str]:
    """Each threshold of ``table`` the indices are beyond, as ``mem=1100<LoadSchedMem=1300``."""
    out = []
    for index, limit in table.items():
        value = indices.get(index)
        if value is None:
            continue
        word = INDICES[index][0]
        if lower_is_worse(index) and value < limit:
            out.append(f"{index}={_number(value)}<Load{kind}{word}={_number(limit)}")
        elif not lower_is_worse(index) and value > limit:
            out.append(f"{index}={_number(round(value, 2))}>Load{kind}{word}={_number(limit)}")
    return out


def satisfied(indices: Mapping[str, float], table: Mapping[str, float]) -> bool:
    """Every threshold met with room: memory strictly above, the others strictly below."""
    for index, limit in table.items():
        value = indices.get(index)
        if value is None:
            return False
        if (value <= limit) if lower_is_worse(index) else (value >= limit):
            return False
    return True


def stop_order(jobs: Sequence[NodeJob]) -> list[NodeJob]:
    """Running jobs in the order they are stopped: lowest priority, then latest started."""
    return sorted((j for j in jobs if not j.stopped), key=lambda j: (j.priority, -j.start, -j.job_id))


def continue_order(jobs: Sequence[NodeJob]) -> list[NodeJob]:
    """Stopped jobs in the order they are continued: highest priority, then earliest started."""
    return sorted((j for j in jobs if j.stopped), key=lambda j: (-j.priority, j.start, j.job_id))


def check_node(
    *,
    thresholds: Thresholds,
    indices: Mapping[str, float],
    run_queue: int | None,
    jobs: Sequence[NodeJob],
    load_drained: bool,
    admin_drained: bool,
    now: float,
) -> list[Decision]:
    """The decisions of one check of one node (at most one stop and one continue)."""
    if not thresholds or not indices:
        return []
    decisions: list[Decision] = []
    over = crossed(indices, thresholds.sched, "Sched")
    calm = satisfied(indices, thresholds.sched)
    if over and not load_drained and not admin_drained:
        decisions.append(Decision("drain", "Load: " + ",".join(over)))
    if thresholds.stop:
        stop_over = crossed(indices, thresholds.stop, "Stop")
        victim = _victim(thresholds, stop_over, run_queue, jobs, now) if stop_over else None
        if victim is not None:
            decisions.append(Decision("stop", "Load: " + ",".join(stop_over), victim.job_id))
    stopped = continue_order(jobs)
    if calm and stopped:
        decisions.append(Decision("continue", "Load: thresholds met", stopped[0].job_id))
    elif calm and load_drained:
        decisions.append(Decision("undrain", "Load: thresholds met"))
    return decisions


def _victim(
    thresholds: Thresholds,
    stop_over: list[str],
    run_queue: int | None,
    jobs: Sequence[NodeJob],
    now: float,
) -> NodeJob | None:
    running = stop_order(jobs)
    if len(running) <= 1:  # the last job left running is never stopped
        return None
    by_index = {entry.split("=", 1)[0] for entry in stop_over}
    # Safeguard 3: only run-queue averages are over, and the queue itself already fell
    # under each of their stop thresholds.
    if (
        by_index <= set(RUN_QUEUE_INDICES)
        and run_queue is not None
        and all(run_queue <= thresholds.stop[i] for i in by_index)
    ):
        return None
    # Safeguard 4 waits for the next in order rather than skip it: stopping a job of higher
    # priority instead would break the order the spec sets.
    first = running[0]
    return first if now - first.start >= CHECK_INTERVAL else None
