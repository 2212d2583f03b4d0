"""Power saving through the services, with real (tiny) programs and the clock moved by
hand: CLOUD nodes at load, a job resuming them (CONFIGURING, then RUNNING only once they
registered), ResumeTimeout, SuspendTime, manual power, the configuration check."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
from auditlog.models import LogEntry
from django.utils import timezone

from cluster import publish
from cluster.core.states import NodeBase, NodeFlag
from cluster.models import ClusterConfig, Event, Job, Node
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_cancel, job_submit
from cluster.services.scheduling import schedule_pass
from power import services
from power.core import programs
from power.models import PowerRun, PowerState

pytestmark = pytest.mark.django_db

RECORDER = """#!/bin/sh
# Records its call: the program name, its arguments, and the resume file's JSON.
d=$(dirname "$0")
echo "$(basename "$0") $*" >> "$d/calls"
if [ -n "${SLURM_RESUME_FILE:-}" ]; then cp "$SLURM_RESUME_FILE" "$d/resume.json"; fi
"""


@pytest.fixture
def power_conf(conf_dir: Path, tmp_path: Path, settings):
    """The demo configuration with the demo programs replaced by recorders in ``bin``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("resume", "suspend", "resume_fail"):
        path = bindir / name
        path.write_text(RECORDER)
        path.chmod(0o755)
    text = (conf_dir / "slurm.conf").read_text().replace('"/bin/sh power/', f'"{bindir}/')
    (conf_dir / "slurm.conf").write_text(text)
    settings.CONF_DIR = conf_dir
    config_load(path=conf_dir / "slurm.conf")
    return bindir


@pytest.fixture
def ended(monkeypatch, tmp_path):
    """The spawner, with the program ends collected here (the reaper threads cannot use
    the test's database transaction)."""
    runs: list[tuple[int, int]] = []
    spawner = programs.Spawner(lambda run_id, code, _t: runs.append((run_id, code)), resume_dir=tmp_path)
    monkeypatch.setattr(services, "_spawner", spawner)
    return runs


@pytest.fixture
def sent(monkeypatch):
    """What the controller sends to agents (to check when a launch goes out)."""
    out: list[tuple[str, dict]] = []
    monkeypatch.setattr(publish, "to_agent", lambda node, payload: out.append((node, payload)))
    return out


def wait_file(path: Path, expect: str = "", timeout: float = 10) -> str:
    """The file's text once it holds ``expect`` (the programs run in the background)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip() and expect in path.read_text():
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} does not hold {expect!r}")


def node(name: str) -> Node:
    return Node.objects.get(name=name)


def register(names, *, boot_time: float, now=None):
    return agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": boot_time} for n in names],
        running=[],
        completions=[],
        now=now,
    )


def cloud_job(users, **spec) -> int:
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "cloud", **spec}
    return job_submit(user=users["alice"], spec=spec).job_ids[0]


def test_cloud_nodes_are_powered_down_at_load_and_power_saving_is_on(power_conf):
    n = node("cloud01")
    assert n.flags & NodeFlag.CLOUD and n.flags & NodeFlag.POWERED_DOWN
    assert n.state_short == "idle~"
    assert PowerState.current().auto_enabled
    assert not node("node01").flags & NodeFlag.POWERED_DOWN


def test_a_job_on_powered_down_nodes_resumes_them_and_starts_once_they_registered(
    power_conf, users, ended, sent, django_capture_on_commit_callbacks
):
    job_id = cloud_job(users, nodes="2")
    now = timezone.now()
    schedule_pass(now=now)
    job = Job.objects.get(pk=job_id)
    assert job.state == "CONFIGURING" and sorted(job.alloc) == ["cloud01", "cloud02"]
    assert not [p for _, p in sent if p["type"] == "launch"]  # not before the nodes are up
    assert node("cloud01").flags & NodeFlag.POWER_UP

    with django_capture_on_commit_callbacks(execute=True):
        services.power_pass(now=now + timedelta(seconds=1), force=True)
    assert node("cloud01").flags & NodeFlag.POWERING_UP and node("cloud01").state_short == "mix#"
    run = PowerRun.objects.get(kind="resume")
    assert (run.program, run.nodes, run.jobs) == ("demo_resume", "cloud[01-02]", [job_id])
    assert wait_file(power_conf / "calls", "resume").strip() == "resume cloud[01-02]"
    document = json.loads(wait_file(power_conf / "resume.json", "}"))
    assert document["all_nodes_resume"] == "cloud[01-02]"
    assert document["jobs"][0]["job_id"] == job_id and document["jobs"][0]["partition"] == "cloud"

    # One node up: the job still waits for the other.
    boot = (now + timedelta(seconds=2)).timestamp()
    register(["cloud01"], boot_time=boot, now=now + timedelta(seconds=3))
    assert not node("cloud01").flags & (NodeFlag.POWERING_UP | NodeFlag.POWERED_DOWN)
    services.power_pass(now=now + timedelta(seconds=4), force=True)
    assert Job.objects.get(pk=job_id).state == "CONFIGURING"
    register(["cloud02"], boot_time=boot, now=now + timedelta(seconds=5))
    services.power_pass(now=now + timedelta(seconds=6), force=True)
    job.refresh_from_db()
    assert job.state == "RUNNING"
    launches = [(host, p) for host, p in sent if p["type"] == "launch"]
    assert [(h, p["job"]["job_id"]) for h, p in launches] == [(job.batch_host, job_id)]
    assert Event.objects.filter(job_id=job_id, new_state="RUNNING", reason="nodes powered up").exists()


def test_fast_power_up_launch_starts_the_job_at_registration(
    power_conf, conf_dir, users, ended, django_capture_on_commit_callbacks
):
    text = (conf_dir / "slurm.conf").read_text()
    (conf_dir / "slurm.conf").write_text(
        text.replace("power_save_min_interval=1", "power_save_min_interval=1,fast_power_up_launch")
    )
    config_load(path=conf_dir / "slurm.conf")
    job_id = cloud_job(users)
    now = timezone.now()
    schedule_pass(now=now)
    with django_capture_on_commit_callbacks(execute=True):
        services.power_pass(now=now, force=True)
    result = register(["cloud01"], boot_time=now.timestamp() + 1, now=now + timedelta(seconds=2))
    assert Job.objects.get(pk=job_id).state == "RUNNING"
    # The agent joins its node's group after registering: the launch goes in the reply.
    assert [p["job"]["job_id"] for p in result.relaunch] == [job_id]


def test_a_node_that_never_registers_goes_down_and_its_job_is_requeued(
    power_conf, users, ended, django_capture_on_commit_callbacks
):
    job_id = cloud_job(users)
    now = timezone.now()
    schedule_pass(now=now)
    with django_capture_on_commit_callbacks(execute=True):
        services.power_pass(now=now, force=True)
    services.power_pass(now=now + timedelta(seconds=30), force=True)
    assert node("cloud01").flags & NodeFlag.POWERING_UP  # ResumeTimeout=60 not reached
    with django_capture_on_commit_callbacks(execute=True):
        services.power_pass(now=now + timedelta(seconds=61), force=True)
    n = node("cloud01")
    assert n.base_state == NodeBase.DOWN and n.reason == "ResumeTimeout reached"
    assert n.flags & NodeFlag.POWERED_DOWN and not n.flags & NodeFlag.POWERING_UP
    job = Job.objects.get(pk=job_id)
    assert job.state == "PENDING" and job.restart_count == 1
    fail = PowerRun.objects.get(kind="resume_fail")
    assert (fail.program, fail.nodes) == ("demo_resume_fail", "cloud01")
    assert "resume_fail cloud01" in wait_file(power_conf / "calls", "resume_fail")
    resume = PowerRun.objects.get(kind="resume")
    assert resume.failure == "ResumeTimeout reached: cloud01 did not register within 60 s"

    # Booting later is "unexpectedly rebooted": it stays DOWN.
    register(["cloud01"], boot_time=now.timestamp() + 70, now=now + timedelta(seconds=71))
    assert node("cloud01").reason == "Node unexpectedly rebooted"
    assert node("cloud01").base_state == NodeBase.DOWN


def test_the_resume_file_carries_the_jobs_real_exclusive_oversubscribe_extra_and_layout(
    power_conf, users, ended, django_capture_on_commit_callbacks
):
    exclusive = cloud_job(users, exclusive=True, extra="arbitrary string", layout="tpu7x=2x2x4")
    shared = cloud_job(users, oversubscribe=True)
    now = timezone.now()
    schedule_pass(now=now)
    with django_capture_on_commit_callbacks(execute=True):
        services.power_pass(now=now + timedelta(seconds=1), force=True)
    document = json.loads(wait_file(power_conf / "resume.json", "}"))
    jobs = {j["job_id"]: j for j in document["jobs"]}
    assert {k: jobs[exclusive][k] for k in ("exclusive", "oversubscribe", "extra", "layout")} == {
        "exclusive": "NODE",
        "oversubscribe": "NO",
        "extra": "arbitrary string",
        "layout": "tpu7x=2x2x4",
    }
    assert {k: jobs[shared][k] for k in ("exclusive", "oversubscribe", "extra", "layout")} == {
        "exclusive": "NO",
        "oversubscribe": "YES",
        "extra": None,
        "layout": None,
    }
    # The exclusive job holds its node whole: the other one is on another node.
    assert jobs[exclusive]["nodes_alloc"] != jobs[shared]["nodes_alloc"]


def test_a_job_that_cannot_be_requeued_ends_node_fail_when_its_node_fails_to_resume(
    power_conf, users, ended, django_capture_on_commit_callbacks
):
    # slurmctld ends a job it cannot requeue (--no-requeue) NODE_FAIL on a failed node.
    job_id = cloud_job(users, requeue=False)
    now = timezone.now()
    schedule_pass(now=now)
    with django_capture_on_commit_callbacks(execute=True):
        services.power_pass(now=now, force=True)
        services.power_pass(now=now + timedelta(seconds=61), force=True)
    job = Job.objects.get(pk=job_id)
    assert job.state == "NODE_FAIL" and job.restart_count == 0 and job.end_time is not None
    assert node("cloud01").alloc_cpus == 0


def test_idle_nodes_power_down_after_suspend_time(
    power_conf, users, ended, sent, django_capture_on_commit_callbacks
):
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        services.power_request(actor=users["admin"], nodes="cloud01", op="POWER_UP", now=now)
        services.power_pass(now=now, force=True)
    register(["cloud01"], boot_time=now.timestamp() + 1, now=now + timedelta(seconds=2))
    assert node("cloud01").state_short == "idle"
    services.power_pass(now=now + timedelta(seconds=30), force=True)
    assert node("cloud01").state_short == "idle"  # SuspendTime=60 on the cloud partition
    with django_capture_on_commit_callbacks(execute=True):
        services.power_pass(now=now + timedelta(seconds=63), force=True)
    assert node("cloud01").state_short == "idle%"
    assert PowerRun.objects.get(kind="suspend").nodes == "cloud01"
    assert "suspend cloud01" in wait_file(power_conf / "calls", "suspend")
    # Unusable for SuspendTimeout (5 s), then powered down.
    services.power_pass(now=now + timedelta(seconds=66), force=True)
    assert node("cloud01").state_short == "idle%"
    services.power_pass(now=now + timedelta(seconds=69), force=True)
    assert node("cloud01").state_short == "idle~"
    # node01..node32 are never suspended (no SuspendTime for them).
    assert not Node.objects.filter(name__startswith="node", flags__gt=0).exclude(
        flags=NodeFlag.NOT_RESPONDING
    )


def test_manual_power_is_for_staff_recorded_and_one_service(power_conf, api, ended):
    body = {"args": ["down", "asap", "node[01-02]", "Reason=maintenance"]}
    assert api("alice").post("/api/power/", body, format="json").status_code == 403
    assert api("admin").post("/api/power/", body, format="json").status_code == 200
    n = node("node01")
    assert n.flags & NodeFlag.POWER_DOWN and n.flags & NodeFlag.DRAIN and n.reason == "maintenance"
    assert LogEntry.objects.get_for_object(n).first().actor.username == "admin"
    assert Event.objects.filter(new_state="POWER_DOWN_ASAP", user="admin").exists()
    bad = api("admin").post("/api/power/", {"args": ["up", "node01", "Reason=x"]}, format="json")
    assert bad.status_code == 400 and "Reason= is only accepted for power down" in bad.json()["error"]
    unknown = api("admin").post("/api/power/", {"args": ["up", "node01", "Action=nope"]}, format="json")
    assert unknown.status_code == 400 and "no such PowerAction" in unknown.json()["error"]
    # scontrol update State=POWER_UP goes through the same service: cancels the request,
    # and the DRAIN that POWER_DOWN_ASAP set goes with it.
    update = {"nodes": "node01", "state": "POWER_UP"}
    assert api("admin").post("/api/nodes/update/", update, format="json").status_code == 200
    assert not node("node01").flags & (NodeFlag.POWER_DOWN | NodeFlag.DRAIN)


def test_power_down_request_suspends_an_idle_node(
    power_conf, users, ended, django_capture_on_commit_callbacks
):
    register(["node03"], boot_time=1.0)
    services.power_request(actor=users["admin"], nodes="node03", op="POWER_DOWN")
    with django_capture_on_commit_callbacks(execute=True):
        services.power_pass(force=True)
    assert node("node03").flags & NodeFlag.POWERING_DOWN
    assert "suspend node03" in wait_file(power_conf / "calls", "suspend")


def test_cancelling_a_job_waiting_for_power_up_ends_it_at_once(power_conf, users, ended):
    job_id = cloud_job(users)
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == "CONFIGURING"
    job_cancel(actor=users["alice"], job_id=job_id)
    job = Job.objects.get(pk=job_id)
    assert job.state == "CANCELLED" and node("cloud01").alloc_cpus == 0


def test_a_bad_power_configuration_is_refused_and_the_running_one_kept(power_conf, conf_dir):
    version = ClusterConfig.current().version
    with open(conf_dir / "slurm.conf", "a") as f:
        f.write("ResumeRate=-1\nSuspendProgram=/no/such/program\n")
    with pytest.raises(ServiceError) as err:
        config_load(path=conf_dir / "slurm.conf")
    message = str(err.value)
    assert "the configuration in force is kept" in message
    assert (
        "slurm.conf:" in message
        and "ResumeRate=-1" in message
        and "/no/such/program: no such file" in message
    )
    assert ClusterConfig.current().version == version


def test_a_program_that_cannot_start_is_recorded_as_failed(power_conf, ended):
    run = PowerRun.objects.create(kind="suspend", program="x", nodes="node01", started=timezone.now())
    services._spawn(run.pk, ["/no/such/program"], (), None)
    run.refresh_from_db()
    assert run.exit_code == 127 and run.failure.startswith("could not start")


def test_a_finished_run_records_exit_code_and_duration(power_conf):
    start = timezone.now()
    run = PowerRun.objects.create(kind="resume", program="x", nodes="cloud01", started=start)
    services._finish_run(run.pk, 3, start + timedelta(seconds=2.5), error="")
    run.refresh_from_db()
    assert (run.exit_code, run.duration, run.failure, run.failed) == (3, 2.5, "exit code 3", True)


@pytest.mark.usefixtures("ended", "sent")
def test_debug_flags_power_logs_every_decision(power_conf, conf_dir, users, caplog):
    text = (conf_dir / "slurm.conf").read_text()
    (conf_dir / "slurm.conf").write_text(text + "\nDebugFlags=Power\n")
    config_load(path=conf_dir / "slurm.conf")
    now = timezone.now()
    with caplog.at_level("INFO", logger="power.services"):
        services.power_request(actor=users["admin"], nodes="cloud01", op="POWER_UP", now=now)
        services.power_pass(now=now, force=True)
    assert any(r.message.startswith("power_save: ResumeNodes cloud01") for r in caplog.records)
