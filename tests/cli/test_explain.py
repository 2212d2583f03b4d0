"""``fsched explain JOBID`` (#13 point 1): the pending explainer in the terminal, one cause per
line with what would release it, through the real command against a live controller, for a
job held by a QOS limit, an HRES layer, a powered-down node, a hold and a dependency."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from cluster.models import Job
from cluster.services.configuration import config_load
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from hres import services as hres_services
from limits.services import record_add, record_modify
from tests.hres.test_services import hres_conf  # noqa: F401 - a fixture
from tests.limits.test_services import enforce, register
from tests.power.test_power_runtime import without_programs

pytestmark = pytest.mark.django_db(transaction=True)


def submit(user, **spec) -> int:
    spec = {"wrap": "sleep 100", "work_dir": "/tmp", **spec}
    return job_submit(user=user, spec=spec).job_ids[0]


def explain(live_cli, job_id: int | str) -> list[str]:
    status, out, err = live_cli("alice", "explain", str(job_id))
    assert (status, err) == (0, ""), err
    return out.splitlines()


def test_a_job_held_by_a_qos_limit_names_the_limit_its_level_and_the_release(users, demo, live_cli):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science"])
    enforce("limits")
    register(timezone.now())
    record_modify(actor=admin, entity="qos", where=["name=normal"], options=["GrpJobs=1"])
    submit(users["alice"])
    held = submit(users["alice"])
    schedule_pass()
    header, *causes = explain(live_cli, held)
    assert header == f"JobId={held} JobState=PENDING Reason=QOSGrpJobsLimit"
    # The limit with its figures, [the level], and what would release it.
    assert causes == [
        "QOSGrpJobsLimit: GrpJobs=1 (QOS normal): 1 running [QOS QOS normal] "
        "-> Released when running jobs of qos normal end, or raise GrpJobs there."
    ]


def test_a_job_held_by_an_hres_layer_names_the_layer(users, hres_conf, live_cli):  # noqa: F811
    running = submit(users["alice"], partition="all", licenses="flat:12", nodelist="node01")
    schedule_pass()
    assert Job.objects.get(pk=running).state == "RUNNING"
    waiting = submit(users["alice"], partition="all", licenses="flat:1", nodelist="node02")
    hres_services.hres_update(actor=users["admin"], hres_name="natural", disable_hres="true")
    disabled = submit(users["alice"], partition="all", licenses="natural:1")
    schedule_pass()
    header, *causes = explain(live_cli, waiting)
    assert header == f"JobId={waiting} JobState=PENDING Reason=Licenses"
    assert causes == [
        "Licenses: flat: 1 requested, layer low1 has 0 free [HRES flat layer low1] -> Released when jobs "
        "holding these resources end, or raise the layer's count "
        "(scontrol update HRESName=flat LayerName=low1 Count=N)."
    ]
    assert explain(live_cli, disabled)[1:] == [
        "HRESDisabled: natural: DisableHRES=true [HRES natural] "
        "-> scontrol update HRESName=natural DisableHRES=false"
    ]


def test_a_job_held_by_powered_down_nodes_names_their_state_and_how_to_power_them_up(
    users, conf_dir: Path, settings, live_cli
):
    settings.CONF_DIR = conf_dir
    without_programs(conf_dir)  # power saving cannot resume cloud[01-04] by itself
    config_load(path=conf_dir / "slurm.conf")
    job_id = submit(users["alice"], partition="cloud", nodes="2", nodelist="cloud[01-02]")
    schedule_pass()
    assert Job.objects.get(pk=job_id).reason == "ReqNodeNotAvail"
    header, *causes = explain(live_cli, job_id)
    assert header == f"JobId={job_id} JobState=PENDING Reason=ReqNodeNotAvail"
    assert len(causes) == 1
    assert causes == [
        "ReqNodeNotAvail: cloud01 IDLE+CLOUD+POWERED_DOWN, cloud02 IDLE+CLOUD+POWERED_DOWN [node state] "
        "-> Power the nodes up (scontrol power up cloud[01-02]) or set ResumeProgram, or submit without them."
    ]


def test_a_held_job_says_how_to_release_it(users, demo, live_cli):
    job_id = submit(users["alice"])
    status, _, err = live_cli("alice", "scontrol", "hold", str(job_id))
    assert (status, err) == (0, "")
    header, *causes = explain(live_cli, job_id)
    assert header == f"JobId={job_id} JobState=PENDING Reason=JobHeldUser"
    assert causes == [f"JobHeldUser: the job is held by its user [job] -> scontrol release {job_id}"]


def test_the_dependency_reasons_are_explained_when_the_pass_records_them(users, demo, live_cli):
    """The pass records Slurm's Dependency and DependencyNeverSatisfied with the job's
    dependency as Slurm prints it (#16 point 1); the commands and the explainer show them."""
    alice = users["alice"]
    later = submit(alice, begin="now+3600")
    cancelled = submit(alice, begin="now+3600")
    waits = submit(alice, dependency=f"afterok:{later}")
    never = submit(alice, dependency=f"afterok:{cancelled}")
    live_cli("alice", "scancel", str(cancelled))
    schedule_pass()
    assert live_cli("alice", "squeue", "-h", "-j", str(waits), "-o", "%r")[1] == "Dependency\n"
    assert [line for line in explain(live_cli, waits)[1:] if not line.startswith("StartTime=")] == [
        f"Dependency: afterok:{later}(unfulfilled) [job] -> "
        "Released when the jobs it depends on reach that state."
    ]
    assert [line for line in explain(live_cli, never)[1:] if not line.startswith("StartTime=")] == [
        f"DependencyNeverSatisfied: afterok:{cancelled}(failed) [job] -> Never released: scancel {never} "
        "and submit it again."
    ]


def test_a_job_that_is_not_pending_and_bad_job_ids(users, demo, live_cli):
    register(timezone.now())
    job_id = submit(users["alice"])
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == "RUNNING"
    assert explain(live_cli, job_id) == [
        f"JobId={job_id} JobState=RUNNING Reason=None",
        f"Job {job_id} is not pending: nothing holds it.",
    ]
    for bad in ("abc", "99999", "12_x", "-3", "0"):
        status, out, err = live_cli("alice", "explain", bad)
        assert (status, out) == (1, ""), bad
        assert err == "explain: error: Invalid job id specified\n", bad
    status, out, err = live_cli("alice", "explain")
    assert status == 1 and out == "" and "JOBID" in err


def test_an_array_task_is_explained_by_its_slurm_id(users, demo, live_cli):
    spec = {"wrap": "true", "work_dir": "/tmp", "array": "0-2", "hold": True}
    first = job_submit(user=users["alice"], spec=spec)
    task = Job.objects.get(array_job_id=first.job_ids[0], array_task_id=2)
    header, *causes = explain(live_cli, f"{task.array_job_id}_2")
    assert header == f"JobId={task.id} JobState=PENDING Reason=JobHeldUser"
    assert causes[0].startswith("JobHeldUser: ")


def test_nodes_drained_by_load_and_a_job_stopped_by_load(users, tmp_path, live_cli):
    """#14 point 5: the load check's drain is named, with its figures, under the reason the
    scheduler gave; a job the load check stopped says why and what continues it."""
    from cluster.core.states import NodeBase, NodeFlag
    from cluster.models import Node
    from load.services import load_check
    from tests.load.test_check import running
    from tests.load.test_config import EXAMPLE, write
    from tests.load.test_explain import report

    config_load(path=write(tmp_path, EXAMPLE.replace(" State=CLOUD", "")))
    Node.objects.update(base_state=NodeBase.IDLE, flags=NodeFlag.NONE)
    running(901, priority=100, started_ago=600)
    running(902, priority=50, started_ago=500)
    report("compute1", mem=1100, ut=95.0)
    assert load_check() == "drain compute1, stop job 902 on compute1"
    pending = submit(users["alice"])
    schedule_pass()
    reason = Job.objects.get(pk=pending).reason
    header, *causes = explain(live_cli, pending)
    assert header == f"JobId={pending} JobState=PENDING Reason={reason}"
    assert (
        f"{reason}: compute1: drained by the load check: mem=1100 < LoadSchedMem=1300, ut=95 > "
        "LoadSchedUt=80 (partition partition-U7KH5) [node load] -> It is undrained when every "
        "LoadSched threshold is satisfied again (mem > 1300, ut < 80) and its stopped jobs are "
        "continued; the load check runs every 30 s."
    ) in causes
    assert explain(live_cli, 902) == [
        f"JobId=902 JobState=STOPPED Reason={Job.objects.get(pk=902).reason}",
        "STOPPED: compute1: stopped by the load check: mem=1100 < LoadStopMem=1200, ut=95 > LoadStopUt=90 "
        "(partition partition-U7KH5); now mem=1100 < LoadStopMem=1200, ut=95 > LoadStopUt=90; its "
        "memory, CPUs and nodes stay allocated to it [node load] -> It is continued when every "
        "LoadSched threshold is satisfied again (mem > 1300, ut < 80), the stopped jobs of a node "
        "one per check, the highest priority first (at equal priority the earliest started).",
    ]
