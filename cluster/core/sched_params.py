"""slurm.conf's ``SchedulerParameters``: the items that size the scheduler's passes.

Read by the pass from the configuration in force, checked when slurm.conf is read (a bad
value is refused with its file:line, where slurmctld logs it and takes the default):

* ``default_queue_depth``: the jobs per partition an event-driven pass considers (Slurm's
  default 100; unset, the controller's ``FSCHED_QUEUE_DEPTH``);
* ``sched_max_job_start``: the jobs the main scheduling loop starts in one pass, 0 for no
  limit (the default); the jobs it does not reach wait with reason ``Priority``, and
  backfill may still start them;
* ``bf_max_job_test``: the jobs backfill tries to place in one pass (default 500);
* ``bf_max_job_start``: the jobs backfill starts in one pass, 0 for no limit (the
  default, at most 10000);
* ``bf_window``: minutes ahead backfill plans its reservations (default 1440, a day; at
  most 43200, thirty days);
* ``max_sched_time``: seconds the main scheduling loop tries jobs for before it leaves the
  rest to the next pass (unset: half of MessageTimeout, at least 1 and at most 2:
  :func:`main_loop_budget`).

The other items are read where they act (``sched_interval`` and ``bf_interval`` by the
cycles, ``max_script_size`` by submission, ``bf_min_prio_reserve`` by the priority
plugin, ``nohold_on_prolog_fail`` by the prolog service); an item fsched does not know is
left alone, as slurmctld leaves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from slurmwords.option_lists import option_items


@dataclass(frozen=True)
class SchedParams:
    default_queue_depth: int | None = None
    sched_max_job_start: int = 0
    bf_max_job_test: int = 500
    bf_max_job_start: int = 0
    bf_window: int = 1440
    max_sched_time: int | None = None


# Each item's least and greatest value (None: no greatest), as slurmctld accepts them.
_RANGES: dict[str, tuple[int, int | None]] = {
    "default_queue_depth": (1, None),
    "sched_max_job_start": (0, None),
    "bf_max_job_test": (1, None),
    "bf_max_job_start": (0, 10000),
    "bf_window": (1, 43200),
    "max_sched_time": (1, None),
}


def main_loop_budget(params: SchedParams, message_timeout: int) -> int:
    """The main scheduling loop's seconds: ``max_sched_time``, else Slurm's default of half
    of MessageTimeout, at least 1 and at most 2."""
    if params.max_sched_time is not None:
        return params.max_sched_time
    return min(2, max(1, message_timeout // 2))


@lru_cache(maxsize=16)
def parse_scheduler_parameters(text: str | None) -> SchedParams:
    """The sizing items of a ``SchedulerParameters`` value; ValueError naming the item
    whose value is not a whole number in its range."""
    values: dict[str, int] = {}
    for name, value in option_items(text).items():
        key = name.lower()
        if key not in _RANGES:
            continue
        low, high = _RANGES[key]
        shown = f"{name}={value}" if value is not None else name
        try:
            number = int(value or "")
        except ValueError:
            raise ValueError(f"{shown}: not a whole number") from None
        if number < low or (high is not None and number > high):
            bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise ValueError(f"{shown}: must be {bounds}")
        values[key] = number
    return SchedParams(**values)
