"""The power-save cycle's node read written out as SQL (power.cycle_input.cycle_node_names,
#18) against the ORM query it replaced, on random nodes (states, power and other flags,
own SuspendTime, last busy times around the cutoff, never busy), random SuspendTime
settings, the load time before and after the cutoff, automatic power saving on and off.

A condition left out (the idle nodes' flags, the never-busy nodes), a parameter in the
wrong place or a time compared in another form fails here.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import F, Q

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node
from power import cycle_input
from power.core.config import PowerConfig

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC).timestamp()


def _orm(power: PowerConfig, *, now: float, loaded: float, auto: bool) -> set[str]:
    """The read as it was, with nothing wanted and nothing held."""
    flagged = F("flags").bitand(cycle_input._PENDING | NodeFlag.POWERED_DOWN)
    query = Q(_power=0)
    if auto:
        idle = Q(base_state__in=[NodeBase.IDLE, NodeBase.DOWN], _busy=0)
        since = Q(suspend_time__isnull=False)
        shortest = cycle_input._shortest_suspend_time(power)
        if shortest is not None:
            cutoff = now - shortest + 1
            since |= Q(last_busy__lte=datetime.fromtimestamp(cutoff, UTC))
            if loaded <= cutoff:
                since |= Q(last_busy__isnull=True)
        query = ~query | (idle & since)
    else:
        query = ~query
    found = (
        Node.objects.annotate(_power=flagged, _busy=F("flags").bitand(cycle_input._NOT_SUSPENDABLE))
        .filter(query)
        .values_list("name", "flags")
    )
    return {
        name for name, flags in found if flags & cycle_input._PENDING or not flags & NodeFlag.POWERED_DOWN
    }


FLAGS = [0, 0, NodeFlag.POWERED_DOWN, NodeFlag.POWERING_UP, NodeFlag.POWER_DOWN, NodeFlag.DRAIN,
         NodeFlag.COMPLETING, NodeFlag.POWERING_DOWN | NodeFlag.POWERED_DOWN]  # fmt: skip


@pytest.mark.parametrize("seed", range(8))
def test_node_read_as_the_orm_query(seed):
    rng = random.Random(seed)
    for i in range(rng.randint(1, 40)):
        busy = rng.choice([None, NOW - 600, NOW - 301, NOW - 299.5, NOW - 299, NOW - 10])
        Node.objects.create(
            name=f"n{i}",
            base_state=rng.choice([NodeBase.IDLE, NodeBase.IDLE, NodeBase.DOWN, NodeBase.ALLOCATED]).value,
            flags=int(rng.choice(FLAGS)),
            suspend_time=rng.choice([None, None, None, 60]),
            last_busy=None
            if busy is None
            else datetime.fromtimestamp(busy, UTC) + timedelta(microseconds=rng.choice([0, 1])),
        )
    for _ in range(6):
        power = PowerConfig(suspend_time=rng.choice([300, 300, -1]))
        auto = rng.random() < 0.8
        loaded = NOW - rng.choice([1000, 100])
        mine = cycle_input.cycle_node_names(
            power, now=NOW, loaded=loaded, auto=auto, exclusions=power.exclusions, holding=()
        )
        assert mine == _orm(power, now=NOW, loaded=loaded, auto=auto)
