"""Backfill's earliest-start search for a job that must wait (``Timeline._plan_indexed``):
the nodes reserved for earlier jobs are looked at job by job, and at 10,000 nodes, where
more multi-node jobs fit and reserve, they are most of a steady pass's work (#18, session
19).  Checked here, by counting that work: a reserved node ready only after the start the
nodes reserved for nobody already give is not read at all, and one placed after the nodes
already chosen does not have its reservations checked; the plans stay the ones their
definition gives (``test_backfill_plan_oracle``)."""

from __future__ import annotations

import pytest

from cluster.core import backfill
from cluster.core.backfill import Timeline
from tests.cluster.test_backfill_plan_oracle import NOW, Case, oracle

ASK = {"count": 2, "cpus": 4, "mem": 0, "whole_mem": False, "whole_node": False, "duration": 60.0}
WHOLE_ASK = {**ASK, "required": [], "excluded": frozenset(), "all_now": False}  # as the oracle reads it


def _case(reserved_release: float) -> Case:
    """Ten busy nodes of 4 CPUs.  Nodes 0-4, reserved for nobody, are free at NOW + 100;
    nodes 5-9, reserved from NOW + 5,000 for an hour, at ``reserved_release``."""
    size = 10
    releases = [(i, NOW + 100, 4, 0) for i in range(5)]
    releases += [(i, reserved_release, 4, 0) for i in range(5, size)]
    return Case(
        cap_cpus=[4] * size,
        cap_mem=[1000] * size,
        free_cpus=[0] * size,
        free_mem=[1000] * size,
        releases=releases,
        reservations=[(list(range(5, size)), NOW + 5_000, 3_600.0)],
        window=86_400.0,
    )


class _Counted(Timeline):
    checked = 0

    def _free_at(self, i: int, t: float, duration: float, ready: float) -> bool:
        self.checked += 1
        return super()._free_at(i, t, duration, ready)


def _plan(case: Case, candidates: list[int]) -> tuple[backfill.Plan | None, _Counted]:
    line = _Counted(
        now=NOW,
        window=case.window,
        free_cpus=list(case.free_cpus),
        free_mem=list(case.free_mem),
        cap_mem=case.cap_mem,
        cap_cpus=case.cap_cpus,
    )
    line.load_releases(case.releases)
    for nodes, start, duration in case.reservations:
        line.reserve(nodes, start, duration)
    return line.plan(candidates, **ASK), line


def test_a_reserved_node_ready_after_the_start_is_not_read(monkeypatch: pytest.MonkeyPatch):
    case = _case(NOW + 500)
    walked: list[int] = []
    real = backfill._starts_between

    def counted(reservations, ready, duration, horizon, *, starts, ends):
        walked.append(len(reservations))
        real(reservations, ready, duration, horizon, starts=starts, ends=ends)

    monkeypatch.setattr(backfill, "_starts_between", counted)
    candidates = list(range(10))
    plan, _ = _plan(case, candidates)
    assert plan == oracle(case, candidates, WHOLE_ASK)
    assert plan is not None and plan.start == NOW + 100 and plan.nodes == (0, 1)
    assert walked == []  # was one walk per reserved node: [1, 1, 1, 1, 1]


def test_a_reserved_node_placed_after_the_chosen_ones_is_not_checked():
    case = _case(NOW + 100)
    candidates = list(range(10))
    plan, line = _plan(case, candidates)
    assert plan == oracle(case, candidates, WHOLE_ASK)
    assert plan is not None and plan.start == NOW + 100 and plan.nodes == (0, 1)
    assert line.checked == 0  # was 5: every reserved node's reservations

    # Placed first, they are checked, and chosen when clear at the start.
    first = list(range(5, 10)) + list(range(5))
    plan, line = _plan(case, first)
    assert plan == oracle(case, first, WHOLE_ASK)
    assert plan is not None and plan.nodes == (5, 6)
    assert line.checked == 5
