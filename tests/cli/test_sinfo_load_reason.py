"""``sinfo -R`` on a node the load check drained (#14 point 5): the REASON column is the
check's ``Load: <figures>`` (cut to the column's 20 characters, as Slurm's ``%20E`` cuts
any reason), USER the ``slurm`` that signs slurmctld's own drains, TIMESTAMP the drain's
time; ``%E`` alone prints the whole reason.  Through the real command on a live server."""

from __future__ import annotations

import pytest
from django.utils import timezone

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node
from cluster.services.configuration import config_load
from load.services import load_check
from tests.load.test_config import EXAMPLE, write
from tests.load.test_explain import report

pytestmark = pytest.mark.django_db(transaction=True)


def test_sinfo_r_lists_the_load_drain_with_its_user_and_time(tmp_path, live_cli):
    config_load(path=write(tmp_path, EXAMPLE.replace(" State=CLOUD", "")))
    Node.objects.update(base_state=NodeBase.IDLE, flags=NodeFlag.NONE)
    report("compute1", mem=1100, ut=95.0)
    assert load_check() == "drain compute1"
    drained = Node.objects.get(name="compute1")
    stamp = f"{timezone.localtime(drained.reason_time):%Y-%m-%dT%H:%M:%S}"
    status, out, err = live_cli("alice", "sinfo", "-R")
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "REASON               USER      TIMESTAMP           NODELIST",
        f"Load: mem=1100<LoadS slurm     {stamp} compute1",
    ]
    status, out, err = live_cli("alice", "sinfo", "-R", "-h", "-o", "%E|%u")
    assert out == "Load: mem=1100<LoadSchedMem=1300,ut=95>LoadSchedUt=80|slurm\n"
    report("compute1", mem=5000, ut=10.0)
    assert load_check() == "undrain compute1"
    assert live_cli("alice", "sinfo", "-R", "-h")[1] == ""  # undrained: no reason listed
