"""The runtime exceptions under "Overview" in Slurm's power_save.html, at the service level: a
per-node SuspendTime given at ``scontrol create node`` and at a dynamic registration
(``slurmd -Z --conf``), with the accept / refuse / warn rules when the rest of the power
configuration is not valid, and partition node-list changes taking effect for the
power-save cycle (SuspendTime, ResumeTimeout, PowerDownOnIdle)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.dynamic_nodes import node_create
from cluster.services.errors import ServiceError
from power import services
from power.models import PowerState

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(conf_dir: Path, settings) -> Path:
    """The demo configuration with runnable programs (SuspendTime only on ``cloud``).
    Programs start only on commit, which these tests never run: no process is spawned."""
    settings.CONF_DIR = conf_dir
    text = (
        (conf_dir / "slurm.conf").read_text().replace('Program="/bin/sh power/', 'Program="/bin/true power/')
    )
    (conf_dir / "slurm.conf").write_text(text)
    config_load(path=conf_dir / "slurm.conf")
    return conf_dir


def without_programs(conf_dir: Path) -> str:
    """Drop the power programs and every finite SuspendTime, reconfigure: power save is not
    configured ("ready" is false).  Returns the old slurm.conf text to restore it."""
    old = (conf_dir / "slurm.conf").read_text()
    lines = [
        line
        for line in old.splitlines()
        if not line.startswith(("ResumeProgram", "SuspendProgram", "ResumeFailProgram"))
    ]
    (conf_dir / "slurm.conf").write_text("\n".join(lines) + "\n")
    parts = (conf_dir / "partitions.conf").read_text()
    (conf_dir / "partitions.conf").write_text(re.sub(r"SuspendTime=\S+", "", parts))
    config_load(path=conf_dir / "slurm.conf")
    return old


def auto_off() -> None:
    """As if no finite SuspendTime were configured: automatic power save is off."""
    PowerState.objects.filter(pk=PowerState.current().pk).update(auto_enabled=False)


def auto_on() -> bool:
    return PowerState.current().auto_enabled


def register(name: str, *, now: datetime, conf: str = "") -> agents.Registration:
    info = {"name": name, "cpus": 4, "real_memory": 2000, "boot_time": now.timestamp() - 5}
    if conf:
        info["conf"] = conf
    return agents.agent_register(agent_id="test:1", nodes=[info], running=[], completions=[], now=now)


def state(name: str) -> str:
    return Node.objects.get(name=name).state_short


def set_partitions(conf_dir: Path, extra: str = "", cloud: str = "cloud[01-04]") -> None:
    """Rewrite partitions.conf: the ``cloud`` partition (SuspendTime=60) with ``cloud``
    as its node list, plus ``extra`` lines; then reconfigure."""
    text = (conf_dir / "partitions.conf").read_text()
    text = re.sub(r"(PartitionName=cloud Nodes=)\S+", lambda m: m.group(1) + cloud, text) + extra
    (conf_dir / "partitions.conf").write_text(text)
    config_load(path=conf_dir / "slurm.conf")


# --------------------------------------------------------------------------- scontrol create


def test_create_with_a_finite_suspend_time_turns_power_save_on_at_once(demo, users):
    auto_off()
    node = node_create(
        actor=users["admin"], params={"NodeName": "dyn1", "State": "cloud", "SuspendTime": "120"}
    )
    assert Node.objects.get(name="dyn1").suspend_time == 120 == node.suspend_time
    assert auto_on()
    node_create(actor=users["admin"], params={"NodeName": "dyn2", "State": "cloud", "SuspendTime": "NONE"})
    assert Node.objects.get(name="dyn2").suspend_time is None


def test_create_refuses_a_finite_suspend_time_without_power_save(demo, users):
    without_programs(demo)
    with pytest.raises(ServiceError, match="SuspendTime=120 cannot be set"):
        node_create(actor=users["admin"], params={"NodeName": "dyn1", "SuspendTime": "120"})
    assert not Node.objects.filter(name="dyn1").exists()
    # INFINITE (and NONE) are accepted: they enable nothing.
    node_create(actor=users["admin"], params={"NodeName": "dyn1", "SuspendTime": "INFINITE"})
    assert Node.objects.get(name="dyn1").suspend_time == -1
    assert not auto_on()


def test_create_refuses_a_bad_suspend_time(demo, users):
    with pytest.raises(ServiceError, match="Invalid SuspendTime"):
        node_create(actor=users["admin"], params={"NodeName": "dyn1", "SuspendTime": "soon"})
    assert not Node.objects.filter(name="dyn1").exists()


# --------------------------------------------------------------------------- slurmd -Z


def test_a_dynamic_node_registered_with_suspend_time_powers_down_after_it(demo):
    auto_off()
    now = timezone.now()
    assert register("dyn1", now=now, conf="SuspendTime=30 RealMemory=2000").accepted == ["dyn1"]
    node = Node.objects.get(name="dyn1")
    assert (node.suspend_time, node.last_busy, node.base_state) == (30, now, NodeBase.IDLE)
    assert auto_on()
    # Idle time counts from the registration, not from the last reconfigure.
    services.power_pass(now=now + timedelta(seconds=20), force=True)
    assert state("dyn1") == "idle"
    services.power_pass(now=now + timedelta(seconds=31), force=True)
    assert Node.objects.get(name="dyn1").flags & NodeFlag.POWERING_DOWN
    assert state("node01") in ("idle", "unk")  # no SuspendTime: never suspended


def test_a_dynamic_registration_without_power_save_is_accepted_with_a_warning(demo, caplog):
    old = without_programs(demo)
    now = timezone.now()
    assert register("dyn1", now=now, conf="SuspendTime=30").accepted == ["dyn1"]
    assert Node.objects.get(name="dyn1").suspend_time == 30
    assert "dyn1: SuspendTime has no effect until power save is configured" in caplog.text
    assert not auto_on()
    services.power_pass(now=now + timedelta(seconds=60), force=True)
    assert state("dyn1") == "idle"
    # Once power save is configured and reconfigured, the node's SuspendTime counts.
    (demo / "slurm.conf").write_text(old)
    config_load(path=demo / "slurm.conf")
    assert auto_on()


def test_a_dynamic_registration_with_a_bad_suspend_time_is_refused(demo, caplog):
    got = register("dyn1", now=timezone.now(), conf="SuspendTime=soon")
    assert "dyn1" in got.rejected
    assert not Node.objects.filter(name="dyn1").exists()
    assert "bad dynamic configuration" in caplog.text


# --------------------------------------------------------------------------- partition node lists


def test_nodes_moved_into_or_out_of_a_suspend_time_partition(demo):
    now = timezone.now()
    for name in ("node01", "node02"):
        register(name, now=now)
    set_partitions(demo, cloud="cloud[01-04],node[01-02]")
    Node.objects.filter(name__in=["node01", "node02"]).update(last_busy=now)
    services.power_pass(now=now + timedelta(seconds=30), force=True)
    assert (state("node01"), state("node02")) == ("idle", "idle")
    # node02 leaves the partition (SuspendTime=60) before its time: it stays up.
    set_partitions(demo, cloud="cloud[01-04],node01")
    services.power_pass(now=now + timedelta(seconds=61), force=True)
    assert Node.objects.get(name="node01").flags & NodeFlag.POWERING_DOWN
    assert state("node02") == "idle"


def test_a_partition_with_suspend_time_gaining_nodes_turns_power_save_on(demo):
    without_programs(demo)
    text = (demo / "slurm.conf").read_text()
    programs = "ResumeProgram=demo_resume\nSuspendProgram=demo_suspend\nResumeFailProgram=demo_resume_fail\n"
    (demo / "slurm.conf").write_text(text + programs)
    config_load(path=demo / "slurm.conf")
    assert not auto_on()  # programs, but no finite SuspendTime anywhere
    set_partitions(demo, extra="PartitionName=green Nodes=node03 SuspendTime=45\n")
    assert auto_on()
    now = timezone.now()
    register("node03", now=now)
    Node.objects.filter(name="node03").update(last_busy=now)
    services.power_pass(now=now + timedelta(seconds=46), force=True)
    assert Node.objects.get(name="node03").flags & NodeFlag.POWERING_DOWN


def test_resume_timeout_follows_the_partitions_a_node_is_in(demo, users):
    now = timezone.now()
    services.power_request(actor=users["admin"], nodes="cloud[01-02]", op="POWER_UP", now=now)
    services.power_pass(now=now, force=True)
    assert Node.objects.get(name="cloud01").flags & NodeFlag.POWERING_UP
    # cloud01 joins a partition with a longer ResumeTimeout while powering up.
    set_partitions(demo, extra="PartitionName=slow Nodes=cloud01 ResumeTimeout=300\n")
    services.power_pass(now=now + timedelta(seconds=100), force=True)
    assert Node.objects.get(name="cloud02").base_state == NodeBase.DOWN  # global ResumeTimeout=60
    assert Node.objects.get(name="cloud01").flags & NodeFlag.POWERING_UP


def test_power_down_on_idle_of_a_partition_a_node_joined(demo):
    now = timezone.now()
    register("node04", now=now)
    set_partitions(demo, extra="PartitionName=once Nodes=node04 PowerDownOnIdle=YES\n")
    services.nodes_freed({"node04": {"once"}}, now=now + timedelta(seconds=5))
    assert Node.objects.get(name="node04").flags & NodeFlag.POWER_DOWN
