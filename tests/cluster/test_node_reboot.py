"""``scontrol reboot`` and ``cancel_reboot`` (#13 point 8), through the services and the REST
API, with registrations as an agent sends them: ``@`` while the reboot waits for the node
to be idle, ``^`` once issued, back on a registration with a new boot time."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from cluster import publish
from cluster.models import Job, Node
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from cluster.services.reboots import node_cancel_reboot, node_reboot, reboot_pass
from cluster.services.scheduling import schedule_pass

DEBUG = [f"node{i:02d}" for i in range(1, 9)]


@pytest.fixture
def sent(monkeypatch):
    """The reboot commands sent to agents, as (node, message) pairs."""
    out: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        publish, "to_agents", lambda commands: out.extend(c for c in commands if c[1]["type"] == "reboot")
    )
    return out


@pytest.fixture
def rebootable(conf_dir, settings, db):
    with open(conf_dir / "slurm.conf", "a") as f:
        f.write("RebootProgram=/usr/sbin/reboot\n")
    settings.CONF_DIR = conf_dir
    config_load(path=conf_dir / "slurm.conf")
    register(boot_time=time.time() - 3600)


def register(boot_time: float, names=DEBUG):
    return agents.agent_register(
        agent_id="host:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": boot_time} for n in names],
        running=[],
        completions=[],
    )


def node(name: str) -> Node:
    return Node.objects.get(name=name)


def shown(name: str) -> tuple[str, str, str]:
    n = node(name)
    return n.state_short, n.state, n.reason


def test_without_a_reboot_program_it_is_refused_and_nothing_changes(demo, users):
    register(boot_time=1.0)
    with pytest.raises(ServiceError, match=r"^RebootProgram isn't defined$"):
        node_reboot(actor=users["admin"], nodes="node01")
    assert shown("node01") == ("idle", "IDLE", "")


def test_an_idle_node_reboots_at_once_and_comes_back_on_a_new_boot_time(rebootable, users, sent):
    answer = node_reboot(actor=users["admin"], nodes="node01")
    assert (answer.queued, answer.message) == (["node01"], "")
    assert shown("node01") == ("boot^", "DOWN+REBOOT_ISSUED", "reboot requested : reboot issued")
    assert sent == [("node01", {"type": "reboot", "node": "node01"})]
    # Its agent disconnects while it reboots: not "not responding", it is rebooting.
    agents.agent_disconnected(nodes=["node01"])
    assert shown("node01")[1] == "DOWN+REBOOT_ISSUED"
    # An agent that reconnects without having rebooted changes nothing.
    register(boot_time=time.time() - 3600, names=["node01"])
    assert shown("node01")[0] == "boot^"
    register(boot_time=time.time() + 1, names=["node01"])
    assert shown("node01") == ("idle", "IDLE", "")
    assert node("node01").reboot_issued_at is None


def test_a_busy_node_waits_for_its_jobs_and_takes_new_ones_meanwhile(rebootable, users, sent):
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "debug", "nodelist": "node01", "time": "5"}
    first = job_submit(user=users["alice"], spec=spec).job_ids[0]
    schedule_pass(backfill=False)
    node_reboot(actor=users["admin"], nodes="node01", reason="new kernel")
    assert shown("node01") == ("mix@", "MIXED+REBOOT_REQUESTED", "new kernel")
    # Without ASAP the node still takes jobs.
    second = job_submit(user=users["alice"], spec=spec).job_ids[0]
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=second).state == "RUNNING"
    assert sent == []
    for job in Job.objects.filter(pk__in=[first, second]):
        agents.job_completed(
            completion={"job_id": job.id, "node": "node01", "exit_code": 0, "signal": 0,
                        "end_time": time.time()}
        )  # fmt: skip
    assert shown("node01")[0] == "boot"  # idle, the reboot still requested
    assert reboot_pass() == ["node01"]
    assert shown("node01") == ("boot^", "DOWN+REBOOT_ISSUED", "new kernel : reboot issued")
    assert [n for n, _ in sent] == ["node01"]


def test_asap_drains_and_the_drain_ends_with_the_reboot(rebootable, users, sent):
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "debug", "nodelist": "node02", "time": "5"}
    job = job_submit(user=users["alice"], spec=spec).job_ids[0]
    schedule_pass(backfill=False)
    node_reboot(actor=users["admin"], nodes="node02", asap=True)
    assert shown("node02") == ("drng@", "MIXED+DRAIN+REBOOT_REQUESTED", "Reboot ASAP")
    blocked = job_submit(user=users["alice"], spec=spec).job_ids[0]
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=blocked).state == "PENDING"
    agents.job_completed(
        completion={"job_id": job, "node": "node02", "exit_code": 0, "signal": 0, "end_time": time.time()}
    )
    reboot_pass()
    assert shown("node02") == ("boot^", "DOWN+DRAIN+REBOOT_ISSUED", "Reboot ASAP : reboot issued")
    register(boot_time=time.time() + 1, names=["node02"])
    assert shown("node02") == ("idle", "IDLE", "")


def test_nextstate_down_keeps_the_node_down_after_the_reboot(rebootable, users, sent):
    node_reboot(actor=users["admin"], nodes="node03", next_state="down")
    register(boot_time=time.time() + 1, names=["node03"])
    assert shown("node03") == ("down", "DOWN", "reboot requested : reboot issued : reboot complete")


def test_a_node_that_does_not_come_back_within_resume_timeout_is_down(rebootable, users, sent):
    node_reboot(actor=users["admin"], nodes="node04")
    assert reboot_pass(now=timezone.now() + timedelta(seconds=30)) == []
    assert shown("node04")[0] == "boot^"
    reboot_pass(now=timezone.now() + timedelta(seconds=61))  # the demo's ResumeTimeout=60
    assert shown("node04") == ("down", "DOWN", "reboot requested : reboot issued : reboot timed out")


def test_nodes_already_rebooting_are_skipped_and_bad_input_refused(rebootable, users, sent):
    node_reboot(actor=users["admin"], nodes="node05")
    answer = node_reboot(actor=users["admin"], nodes="node[05-06]")
    assert answer.queued == ["node06"]
    assert answer.message == "Skipping reboot of nodes node05 due to current node state."
    before = shown("node07")
    with pytest.raises(ServiceError, match="Invalid state: UP"):
        node_reboot(actor=users["admin"], nodes="node07", next_state="UP")
    with pytest.raises(ServiceError, match="Invalid node name specified: nodeXX"):
        node_reboot(actor=users["admin"], nodes="node07,nodeXX")
    assert shown("node07") == before


def test_cancel_reboot_undoes_an_asap_drain(rebootable, users, sent):
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "debug", "nodelist": "node08", "time": "5"}
    job_submit(user=users["alice"], spec=spec)
    schedule_pass(backfill=False)
    node_reboot(actor=users["admin"], nodes="node08", asap=True)
    node_cancel_reboot(actor=users["admin"], nodes="node08")
    assert shown("node08") == ("mix", "MIXED", "")
    with pytest.raises(ServiceError, match="Invalid node state transition"):
        node_cancel_reboot(actor=users["admin"], nodes="node08")
    # An issued reboot cannot be cancelled.
    node_reboot(actor=users["admin"], nodes="node07")
    with pytest.raises(ServiceError, match="Reboot already in progress"):
        node_cancel_reboot(actor=users["admin"], nodes="node07")


def test_rest_api_is_staff_only_and_says_what_it_skipped(rebootable, users, sent, api):
    assert api("alice").post("/api/nodes/reboot/", {"nodes": "node01"}, format="json").status_code == 403
    ok = api("admin").post("/api/nodes/reboot/", {"nodes": "ALL", "asap": True}, format="json")
    assert ok.status_code == 200
    body = ok.json()
    assert "node01" in body["nodes"] and body["skipped"]  # the cloud nodes are powered down
    assert body["message"] == "Skipping reboot of nodes cloud[01-04] due to current node state."
    bad = api("admin").post("/api/nodes/reboot/", {"nodes": "node01", "force": True}, format="json")
    assert bad.status_code == 400 and "force" in bad.json()["error"]
    cancel = api("admin").post(
        "/api/nodes/update/", {"nodes": "cloud01", "state": "CANCEL_REBOOT"}, format="json"
    )
    assert cancel.status_code == 400 and cancel.json()["error"] == "Invalid node state transition"
