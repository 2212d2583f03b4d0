"""What a registering node reports is checked as slurmctld checks it (#13 point 7):
``node_reg_mem_percent`` against its RealMemory, and a node-features Helper's active
features against the node's active changeable ones. An invalid registration makes the
node INVALID_REG and drains it with Slurm's reason; a valid one clears INVALID_REG."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from cluster import publish
from cluster.core.states import NodeFlag
from cluster.models import Job, Node
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from power import services

pytestmark = pytest.mark.django_db


def register(
    name: str, *, memory: int, boot_time: float = 1.0, features: str | None = None, now=None
) -> None:
    info: dict = {"name": name, "cpus": 4, "real_memory": memory, "boot_time": boot_time}
    if features is not None:
        info["active_features"] = features
    agents.agent_register(agent_id="t:1", nodes=[info], running=[], completions=[], now=now)


def load(conf_dir: Path, settings, *, params: str = "", extra: str = "") -> None:
    settings.CONF_DIR = conf_dir
    text = (
        (conf_dir / "slurm.conf").read_text().replace('Program="/bin/sh power/', 'Program="/bin/true power/')
    )
    if params:
        text = text.replace("power_save_min_interval=1", f"power_save_min_interval=1,{params}")
    (conf_dir / "slurm.conf").write_text(extra + text)
    config_load(path=conf_dir / "slurm.conf")


def node(name: str) -> Node:
    return Node.objects.get(name=name)


def test_too_little_memory_is_an_invalid_registration_with_slurms_reason(conf_dir, settings):
    load(conf_dir, settings)
    register("node25", memory=3999)  # RealMemory=4000, node_reg_mem_percent defaults to 100
    n = node("node25")
    assert n.flags & NodeFlag.INVALID_REG and n.flags & NodeFlag.DRAIN
    assert n.reason == "Low RealMemory (reported:3999 < 100.00% of configured:4000)"
    assert "INVALID_REG" in n.state and "DRAIN" in n.state

    register("node25", memory=4000)  # a valid registration clears INVALID_REG; the drain stays
    n = node("node25")
    assert not n.flags & NodeFlag.INVALID_REG and n.flags & NodeFlag.DRAIN

    register("node26", memory=4000)
    assert not node("node26").flags & (NodeFlag.INVALID_REG | NodeFlag.DRAIN)


def test_node_reg_mem_percent_and_the_cloud_default(conf_dir, settings, users):
    load(conf_dir, settings)
    now = timezone.now()
    services.power_request(actor=users["admin"], nodes="cloud[01-02]", op="POWER_UP", now=now)
    services.power_pass(now=now + timedelta(seconds=1), force=True)
    later = now + timedelta(seconds=5)
    # State=CLOUD: 90% by default.
    register("cloud01", memory=1800, boot_time=later.timestamp(), now=later)
    assert not node("cloud01").flags & NodeFlag.INVALID_REG
    register("cloud02", memory=1799, boot_time=later.timestamp(), now=later)
    assert node("cloud02").reason == "Low RealMemory (reported:1799 < 90.00% of configured:2000)"

    load(conf_dir, settings, extra="SlurmdParameters=config_overrides\n")
    register("node29", memory=100)  # nodes are taken as configured, as slurmctld does
    assert not node("node29").flags & NodeFlag.INVALID_REG

    (conf_dir / "slurm.conf").write_text(
        (conf_dir / "slurm.conf").read_text().replace("SlurmdParameters=config_overrides\n", "")
    )
    load(conf_dir, settings, params="node_reg_mem_percent=50")
    register("node27", memory=2000)  # 50% of 4000
    assert not node("node27").flags & NodeFlag.INVALID_REG
    register("node28", memory=1999)
    assert node("node28").reason == "Low RealMemory (reported:1999 < 50.00% of configured:4000)"


def test_a_helpers_reported_features_must_cover_the_active_changeable_ones(
    conf_dir, settings, users, monkeypatch
):
    monkeypatch.setattr(publish, "to_agent", lambda node, payload: None)
    text = (
        (conf_dir / "slurm.conf")
        .read_text()
        .replace("Feature=cloud State=CLOUD", "Feature=cloud,img_a,img_b State=CLOUD")
    )
    (conf_dir / "slurm.conf").write_text(text)
    (conf_dir / "helpers.conf").write_text("NodeName=cloud[01-04] Feature=img_a,img_b Helper=/bin/true\n")
    load(conf_dir, settings, extra="NodeFeaturesPlugins=node_features/helpers\n")
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "cloud", "constraint": "img_b", "nodes": "2"}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    now = timezone.now()
    schedule_pass(now=now)
    assert Job.objects.get(pk=job_id).state == "CONFIGURING"
    services.power_pass(now=now + timedelta(seconds=1), force=True)
    assert node("cloud01").flags & NodeFlag.POWERING_UP and node("cloud01").active_features.endswith("img_b")

    later = now + timedelta(seconds=5)
    register("cloud01", memory=2000, boot_time=later.timestamp(), features="cloud,img_a", now=later)
    n = node("cloud01")
    assert n.flags & NodeFlag.INVALID_REG and n.flags & NodeFlag.DRAIN
    assert n.reason == (
        "Reported active features (cloud,img_a) are not a superset of currently active "
        "changeable features (img_b)"
    )
    # It was powering up: the job waiting for it is requeued, as slurmctld kills it there.
    job = Job.objects.get(pk=job_id)
    assert job.state == "PENDING" and job.restart_count == 1

    register("cloud02", memory=2000, boot_time=later.timestamp(), features="cloud,img_b", now=later)
    assert not node("cloud02").flags & NodeFlag.INVALID_REG
    register("cloud03", memory=2000, boot_time=later.timestamp(), features="", now=later)  # Helper=/bin/true
    assert not node("cloud03").flags & NodeFlag.INVALID_REG


def test_an_invalid_registration_launches_nothing_even_with_fast_power_up_launch(
    conf_dir, settings, users, monkeypatch
):
    sent: list[dict] = []
    monkeypatch.setattr(publish, "to_agent", lambda node, payload: sent.append(payload))
    load(conf_dir, settings, params="fast_power_up_launch")
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "cloud", "requeue": False}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    now = timezone.now()
    schedule_pass(now=now)
    services.power_pass(now=now + timedelta(seconds=1), force=True)
    later = now + timedelta(seconds=5)
    register("cloud01", memory=100, boot_time=later.timestamp(), now=later)
    job = Job.objects.get(pk=job_id)
    assert job.state == "NODE_FAIL"  # cannot be requeued: slurmctld ends it on the failed node
    assert not [p for p in sent if p.get("type") == "launch"]
    assert node("cloud01").flags & NodeFlag.INVALID_REG
