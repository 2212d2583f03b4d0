"""slurm.conf's TmpDisk (and Sockets, CoresPerSocket, ThreadsPerCore) as the node's own:
``scontrol show node`` and ``sinfo``'s TMP_DISK printed 0 and ``1`` whatever was configured,
and ``scontrol create NodeName=... TmpDisk=`` was refused as an unknown parameter."""

from __future__ import annotations

import pytest

from cluster.models import Node
from cluster.services.configuration import config_load

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_configured_tmp_disk_and_layout_are_shown(users, tmp_path, live_cli):
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=t\nSlurmctldHost=localhost\n"
        "NodeName=DEFAULT CPUs=8 RealMemory=2000 TmpDisk=1000\n"
        "NodeName=n[1-2] Sockets=2 CoresPerSocket=2 ThreadsPerCore=2\n"
        "NodeName=n3 TmpDisk=50\n"
        "PartitionName=p Nodes=n[1-3] Default=YES\n"
    )
    config_load(path=conf)
    assert dict(Node.objects.values_list("name", "tmp_disk")) == {"n1": 1000, "n2": 1000, "n3": 50}
    status, out, err = live_cli("alice", "scontrol", "show", "node", "n1")
    assert (status, err) == (0, "")
    assert "CoresPerSocket=2\n" in out and " Sockets=2 " in out and " ThreadsPerCore=2 " in out
    assert "TmpDisk=1000 " in out
    status, out, err = live_cli("alice", "sinfo", "-N", "-h", "-o", "%N %d %z")
    assert (status, err) == (0, "")
    assert out.splitlines() == ["n1 1000 2:2:2", "n2 1000 2:2:2", "n3 50 8:1:1"]


def test_a_dynamic_node_takes_a_tmp_disk(users, demo, live_cli):
    status, _, err = live_cli(
        "admin", "scontrol", "create", "NodeName=dyn1", "CPUs=2", "TmpDisk=300", "State=FUTURE"
    )
    assert (status, err) == (0, "")
    assert Node.objects.get(name="dyn1").tmp_disk == 300
    status, _, err = live_cli("admin", "scontrol", "create", "NodeName=dyn2", "TmpDisk=-1", "State=FUTURE")
    assert status == 1 and "TmpDisk" in err
    assert not Node.objects.filter(name="dyn2").exists()
