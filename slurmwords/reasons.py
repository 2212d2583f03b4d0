"""A pending job's reason as Slurm's commands print it.

Slurm prints the bare reason code (``QOSGrpJobsLimit``, ``Licenses``, ``Resources``) in
squeue's ``%r``/``%R`` and scontrol's ``Reason=``, except where slurmctld sets the job's
state description: then that text is printed instead.  For a pending job it does so for
``ReqNodeNotAvail``: ``ReqNodeNotAvail, UnavailableNodes:node[01-02]`` (the unusable
required nodes, folded), ``ReqNodeNotAvail, May be reserved for other job`` (required nodes
another reservation holds) and ``ReqNodeNotAvail, Reserved for maintenance``; and for a
job requeued held after its Prolog failed, ``launch failed requeued held``.  fsched's own
detail (which limit at which level, which HRES layer, the figures) is kept apart, in the
job's ``reason_detail``, for ``fsched explain`` and the console.
"""

from __future__ import annotations

from slurmwords.hostlists import expand_hostlist, fold_hostlist

REQ_NODE_NOT_AVAIL = "ReqNodeNotAvail"
UNAVAILABLE_NODES = "UnavailableNodes:"
RESERVED_FOR_MAINTENANCE = "Reserved for maintenance"
MAY_BE_RESERVED = "May be reserved for other job"
JOB_HELD_USER = "JobHeldUser"
LAUNCH_FAILED_REQUEUED_HELD = "launch failed requeued held"  # slurmctld's, after a failed Prolog
REQUEUED_HELD = "job requeued in held state"  # slurmctld's, after scontrol requeuehold
# Held for these, squeue prints slurmctld's description of the hold in place of the code.
_HELD_DESCRIBED = frozenset({LAUNCH_FAILED_REQUEUED_HELD, REQUEUED_HELD})


def slurm_reason(reason: str | None, detail: str | None = "") -> str:
    """The reason Slurm's squeue (``%r``) prints for a job: the code alone, or Slurm's long
    form for ``ReqNodeNotAvail`` (see the module's docstring)."""
    code = reason or "None"
    if code == JOB_HELD_USER and detail in _HELD_DESCRIBED:
        return detail
    if code != REQ_NODE_NOT_AVAIL or not detail:
        return code
    if detail.startswith(UNAVAILABLE_NODES):
        return f"{code}, {UNAVAILABLE_NODES}{fold_hostlist(unavailable_nodes(detail))}"
    if detail in (RESERVED_FOR_MAINTENANCE, MAY_BE_RESERVED):
        return f"{code}, {detail}"
    return code


def scontrol_reason(reason: str | None, detail: str | None = "") -> str:
    """``Reason=`` of ``scontrol show job``: squeue's text with white space made ``_``, as
    scontrol prints a job's state description so that the line splits on blanks."""
    return "_".join(slurm_reason(reason, detail).split(" "))


def unavailable_nodes(detail: str) -> list[str]:
    """The node names of a ``UnavailableNodes:...`` detail (folded or comma-separated)."""
    if not detail.startswith(UNAVAILABLE_NODES):
        return []
    try:
        return expand_hostlist(detail[len(UNAVAILABLE_NODES) :])
    except ValueError:
        return [n for n in detail[len(UNAVAILABLE_NODES) :].split(",") if n]
