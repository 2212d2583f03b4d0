"""The accounting limits at ``/metrics`` and on the dashboard: each association's and each
QOS's Grp limits (sacctmgr's GrpTRES, GrpTRESMins, GrpTRESRunMins, GrpJobs, GrpSubmitJobs,
GrpWall) with the usage counted against them, as the scheduler's pass counts it.

One read: the policy (cached by revision), the usage rows, and the active jobs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from cluster.extensions import OverviewPanel, Sample, UsageBar
from limits import reports, selectors
from limits.core.usage import EMPTY, UsageKey, UsageRecord, qos_key
from slurmwords.tres import format_count

PANEL_BARS = 8  # the limits nearest to full; /limits/ shows them all
_TRES = (("grp_tres", "GrpTRES"), ("grp_tres_mins", "GrpTRESMins"), ("grp_tres_run_mins", "GrpTRESRunMins"))
_COUNTS = (("grp_jobs", "GrpJobs"), ("grp_submit_jobs", "GrpSubmitJobs"), ("grp_wall", "GrpWall"))


@dataclass(frozen=True)
class GrpUse:
    """One Grp limit of an association (``qos`` empty) or of a QOS, with its usage."""

    account: str
    user: str
    partition: str
    qos: str
    limit: str  # sacctmgr's name: GrpTRES, GrpJobs...
    tres: str  # "" for the counts
    value: float
    used: float

    @property
    def label(self) -> str:
        who = (
            f"QOS {self.qos}"
            if self.qos
            else "/".join(p for p in (self.account, self.user, self.partition) if p)
        )
        what = (
            f"{self.limit}={self.tres}={format_count(self.tres, self.value)}"
            if self.tres
            else (f"{self.limit}={int(self.value)}")
        )
        return f"{who} {what}"


def _uses(
    limits: object, rec: UsageRecord, counter: object | None
) -> Iterator[tuple[str, str, float, float]]:
    """(limit, tres, value, used) of one holder's Grp limits."""
    for field, name in _TRES:
        for tres, value in getattr(limits, field).items():
            if field == "grp_tres_mins":
                used = rec.tres_mins(tres)
            elif counter is None:
                used = 0.0
            else:
                used = (
                    float(counter.tres.get(tres, 0))
                    if field == "grp_tres"
                    else counter.run_mins.get(tres, 0.0)
                )
            yield name, tres, value, used
    for field, name in _COUNTS:
        value = getattr(limits, field)
        if value is None:
            continue
        if field == "grp_wall":
            used = rec.wall_mins
        elif counter is None:
            used = 0.0
        else:
            used = float(counter.running if field == "grp_jobs" else counter.submitted)
        yield name, "", value, used


def grp_uses() -> list[GrpUse]:
    policy = selectors.context().policy
    if not policy.assocs and not policy.qos:
        return []
    usage: dict[UsageKey, UsageRecord] = selectors.usage_records()
    counters = reports.limit_state(policy, usage).counters
    out = []
    for _depth, a in reports.accounts_tree(policy):
        for limit, tres, value, used in _uses(a.limits, usage.get(a.key, EMPTY), counters.get(a.key)):
            out.append(GrpUse(a.account, a.user, a.partition, "", limit, tres, value, used))
    for q in sorted(policy.qos.values(), key=lambda q: q.name):
        key = qos_key(q.name)
        for limit, tres, value, used in _uses(q.limits, usage.get(key, EMPTY), counters.get(key)):
            out.append(GrpUse("", "", "", q.name, limit, tres, value, used))
    return out


def samples() -> list[Sample]:
    out = []
    for u in grp_uses():
        labels = {
            "account": u.account,
            "user": u.user,
            "partition": u.partition,
            "qos": u.qos,
            "limit": u.limit,
            "tres": u.tres,
        }
        out += [
            Sample(
                "fsched_limit_value",
                "A Grp limit of an association or QOS (TRES, minutes or jobs).",
                labels,
                u.value,
            ),
            Sample("fsched_limit_used", "Usage counted against that Grp limit.", labels, u.used),
        ]
    return out


def panels() -> Sequence[OverviewPanel]:
    uses = grp_uses()
    bars = [UsageBar(u.label, round(u.used, 1), u.value) for u in uses]
    bars.sort(key=lambda b: (-(b.pct or 0), b.label))
    return (
        OverviewPanel(
            "Use against Grp limits", tuple(bars[:PANEL_BARS]), link="/limits/", empty="No Grp limit is set."
        ),
    )
