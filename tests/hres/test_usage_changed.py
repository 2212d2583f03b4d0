"""The layers with usage kept between passes (hres.core.plugin.UsageMemo, #18) found from
the jobs that started or ended since, not rebuilt from every holding job's charges:
against ``HresState.with_usage`` of all of them (an oracle), on random sequences of jobs
come, gone and changed, charges of reservations and negative amounts among them (which
a change cannot be applied over: rebuilt), and a count of the charges applied."""

from __future__ import annotations

import random

import pytest

from hres.core.layers import Charge, HresState, ResourceState
from hres.core.plugin import UsageMemo
from slurmwords.licenses import LicenseItem


def _charges(rng: random.Random, state: HresState, odd: float) -> tuple[Charge, ...]:
    out = []
    for _ in range(rng.randint(1, 3)):
        res = rng.choice(state.resources)
        names = [la.name for la in res.structure.layers] + ["nolayer"]
        low = -3 if rng.random() < odd else 0
        picked = tuple((rng.choice(names), rng.randint(low, 9)) for _ in range(rng.randint(0, 3)))
        resv = rng.choice(["r1", "r2", "other"]) if rng.random() < odd else ""
        out.append(Charge(res.name, 1, picked, reservation=resv))
    return tuple(out)


@pytest.mark.parametrize("seed", range(12))
def test_usage_from_the_changes_equals_the_rebuilt(spec_state: HresState, seed: int) -> None:
    rng = random.Random(seed)
    state = spec_state.with_reservations(
        {"r1": [LicenseItem("flat", 2, layer="low1")], "r2": [LicenseItem("natural", 3, layer="top")]}
    )
    odd = rng.choice([0.0, 0.02, 0.1])
    memo = UsageMemo()
    jobs: dict[int, tuple[Charge, ...]] = {}
    next_id = 1
    for _ in range(60):
        for job_id in rng.sample(sorted(jobs), min(len(jobs), rng.choice([0, 1, 2, 5]))):
            if rng.random() < 0.2:
                jobs[job_id] = _charges(rng, state, odd)  # another allocation
            else:
                del jobs[job_id]
        for _ in range(rng.choice([0, 1, 2, 8])):
            jobs[next_id] = _charges(rng, state, odd)
            next_id += 1
        if rng.random() < 0.05:
            state = state.with_reservations({"r1": [LicenseItem("flat", 1, layer="low1")]})
        charges = tuple(jobs.items())
        got = memo.with_usage(state, charges)
        expected = state.with_usage(c for _job, cs in charges for c in cs)
        assert got == expected
        assert [r.resv_used for r in got.resources] == [r.resv_used for r in expected.resources]


def test_one_job_ended_and_one_started_apply_their_charges_alone(spec_state: HresState, monkeypatch) -> None:
    rng = random.Random(5)
    jobs = {job_id: _charges(rng, spec_state, 0.0) for job_id in range(1, 201)}
    memo = UsageMemo()
    memo.with_usage(spec_state, tuple(jobs.items()))
    applied = []
    added = ResourceState._added

    def counted(self, charges, sign):
        charges = list(charges)
        applied.extend(charges)
        return added(self, charges, sign)

    monkeypatch.setattr(ResourceState, "_added", counted)
    del jobs[7]
    jobs[201] = _charges(rng, spec_state, 0.0)
    got = memo.with_usage(spec_state, tuple(jobs.items()))
    monkeypatch.undo()
    assert len(applied) <= 6  # each job's one to three charges
    assert got == spec_state.with_usage(c for cs in jobs.values() for c in cs)
