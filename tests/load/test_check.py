"""The load check applied (load.services.load_check): a node past a LoadSched threshold is
drained with the figures, undrained when every threshold is met again, and an
administrator's drain is neither taken over nor lifted."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Event, Node
from cluster.services.configuration import config_load
from load.models import NodeLoad
from load.services import load_check
from tests.load.test_config import EXAMPLE, write

CALM = {"mem": 5000, "ut": 10.0, "r15s": 0.1, "r1m": 0.1, "r15m": 0.1, "run_queue": 0}


@pytest.fixture
def compute1(db, tmp_path):
    config_load(path=write(tmp_path, EXAMPLE.replace(" State=CLOUD", "")))
    Node.objects.filter(name="compute1").update(base_state=NodeBase.IDLE, flags=NodeFlag.NONE)
    return "compute1"


def report(node: str, **indices) -> None:
    NodeLoad.objects.update_or_create(node=node, defaults={**CALM, **indices, "at": timezone.now()})


def state(node: str) -> tuple[bool, str]:
    row = Node.objects.get(name=node)
    return bool(row.flags & NodeFlag.DRAIN), row.reason


def test_too_little_memory_drains_then_recovery_undrains(compute1):
    report(compute1, mem=1250)
    assert load_check() == "drain compute1"
    assert state(compute1) == (True, "Load: mem=1250<LoadSchedMem=1300")
    assert Node.objects.get(name=compute1).reason_user == "slurm"
    event = Event.objects.filter(node=compute1).latest("id")
    assert (event.new_state, event.detail["mem"]) == ("IDLE+DRAIN", 1250)
    assert load_check() == "nothing to do"  # drained already: once
    report(compute1, mem=1300)  # on the threshold: neither way
    assert load_check() == "nothing to do"
    report(compute1, mem=1400)
    assert load_check() == "undrain compute1"
    assert state(compute1) == (False, "")


def test_cpu_utilisation_drains_too(compute1):
    report(compute1, ut=85.5)
    load_check()
    assert state(compute1) == (True, "Load: ut=85.5>LoadSchedUt=80")


def test_an_administrator_s_drain_is_left_alone(compute1):
    Node.objects.filter(name=compute1).update(flags=NodeFlag.DRAIN, reason="bad fan")
    report(compute1, mem=100)
    assert load_check() == "nothing to do"
    report(compute1)
    assert load_check() == "nothing to do"
    assert state(compute1) == (True, "bad fan")


def test_old_figures_and_silent_nodes_are_not_judged(compute1):
    NodeLoad.objects.create(node=compute1, **{**CALM, "mem": 100}, at=timezone.now() - timedelta(minutes=5))
    assert load_check() == "no node with thresholds and indices"
    report(compute1, mem=100)
    Node.objects.filter(name=compute1).update(flags=NodeFlag.NOT_RESPONDING)
    assert load_check() == "nothing to do"
    assert state(compute1)[0] is False
