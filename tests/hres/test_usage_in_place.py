"""HresState.charge / release / with_usage, which add many jobs' charges in place per
resource (#18: a pass rebuilds usage from every holding job's charges), against the old
way, one new ResourceState per charge: an oracle.  Random charges of random resources
(one gone since), layers (some not the resource's), amounts past what is used (each
layer's use stays at 0 or more after every single charge) and reservations (some the
state reserves for, some not), added and taken in random order."""

from __future__ import annotations

import random

import pytest

from hres.core.layers import Charge, HresState, ResourceState
from slurmwords.licenses import LicenseItem


def _one_at_a_time(state: HresState, charges: list[Charge], sign: int) -> HresState:
    """The old ``_apply``: each charge a new ResourceState."""
    changed: dict[str, ResourceState] = {}
    for c in charges:
        cur = changed.get(c.resource) or state.get(c.resource)
        if cur is None:
            continue
        idx = cur.structure.index
        used = list(cur.used)
        hits = [(idx[name], a) for name, a in c.layers if name in idx]
        for i, a in hits:
            used[i] = max(0, used[i] + sign * a)
        resv_used = cur.resv_used
        if c.reservation and c.reservation in cur.reserved:
            resv_used = dict(resv_used)
            mine = list(resv_used.get(c.reservation, (0,) * len(used)))
            for i, a in hits:
                mine[i] = max(0, mine[i] + sign * a)
            resv_used[c.reservation] = tuple(mine)
        changed[c.resource] = ResourceState(cur.structure, tuple(used), cur.reserved, resv_used)
    return state._with(changed)


def _charges(rng: random.Random, state: HresState, count: int) -> list[Charge]:
    out = []
    for _ in range(count):
        if rng.random() < 0.05:
            out.append(Charge("gone", 1, (("top", 1),)))
            continue
        res = rng.choice(state.resources)
        names = [la.name for la in res.structure.layers] + ["nolayer"]
        picked = tuple((rng.choice(names), rng.randint(0, 9)) for _ in range(rng.randint(0, 3)))
        out.append(Charge(res.name, 1, picked, reservation=rng.choice(["", "", "r1", "r2", "other"])))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_charges_in_place_equal_one_state_per_charge(spec_state: HresState, seed: int) -> None:
    rng = random.Random(seed)
    state = spec_state.with_reservations(
        {"r1": [LicenseItem("flat", 2, layer="low1")], "r2": [LicenseItem("natural", 3, layer="top")]}
    )
    old = new = state
    for _ in range(30):
        charges = _charges(rng, state, rng.randint(0, 25))
        sign = rng.choice([1, 1, -1])
        old = _one_at_a_time(old, charges, sign)
        new = new.charge(charges) if sign == 1 else new.release(charges)
        assert new == old
        assert [r.resv_used for r in new.resources] == [r.resv_used for r in old.resources]
    charges = _charges(rng, state, 200)
    assert state.with_usage(charges) == _one_at_a_time(state.with_usage(()), charges, 1)
    assert state.charge([]) is state


def test_one_state_per_resource_changed_not_per_charge(spec_state: HresState, monkeypatch) -> None:
    made = []
    init = ResourceState.__init__

    def counted(self, *args, **kwargs):
        made.append(1)
        init(self, *args, **kwargs)

    charges = [Charge("flat", 1, (("low1", 1), ("top", 1))) for _ in range(100)]
    charges += [Charge("natural", 1, (("top", 1),)) for _ in range(100)]
    monkeypatch.setattr(ResourceState, "__init__", counted)
    used = spec_state.charge(charges)
    assert len(made) == 2
    assert used.resource("flat").used[used.resource("flat").structure.index["top"]] == 100
