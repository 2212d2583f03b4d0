"""What the nodes receive of hres/lua (#17 point 4) and what the controller does with a
node callback's failure (#17 point 2, node side): each plugin resource's ``prep`` in the
job's launch (and in the run_epilog of its other nodes), fixed at the start; a failed job
prolog requeues the job held and drains the node, unless ESLURM_HRES_REMOTE_FAIL."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cluster.core.states import JobState, NodeFlag
from cluster.models import ClusterConfig, Job, Node
from cluster.services import prolog_epilog
from cluster.services.scheduling import schedule_pass
from cluster.services.state import launch_payload
from hres import lua_plugins
from slurmwords.agent_messages import PrologEpilog
from tests.hres.test_lua_callbacks import Cluster, finish, started, submit

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PRERUN = 'return slurm.SUCCESS, "token=" .. a.job_id'


@pytest.fixture
def cluster(tmp_path, settings):
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "examples" / "demo", conf)
    with (conf / "partitions.conf").open("a") as f:
        f.write("PartitionName=q Nodes=node[01-04] MaxTime=60 DefaultTime=10\n")
    settings.CONF_DIR = conf
    lua_plugins.install(lua_plugins.Prepared({}, {}))
    yield Cluster(conf)
    lua_plugins.install(lua_plugins.Prepared({}, {}))


def running(user, licenses: str, **spec) -> Job:
    job_id = submit(user, licenses=licenses, **spec)
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == JobState.RUNNING
    return job


def test_the_launch_carries_each_resources_prep_in_resources_yaml_order(cluster, users):
    cluster.script("qpu", hres_controller_job_prerun=PRERUN)
    started(cluster, "qpb", "qpu")
    job = running(users["alice"], "qpu:1[mode=fast],qpb:2")
    sent = launch_payload(job)["job"]["hres"]
    assert [p["name"] for p in sent] == ["qpb", "qpu"]  # resources.yaml's order
    qpb, qpu = sent
    assert qpu["payload"] == f"token={job.id}"
    assert qpb["payload"] is None
    assert qpu["plugin_args"] == {"mode": "fast"}
    assert qpu["config"] == {"path": str(cluster.conf / "qpu.lua"), "service": "https://qpu.example"}
    assert qpu["async_running"] is False
    assert qpu["layers"] == [{"name": "qpu1", "count": 1, "nodes": job.node_list}]
    assert qpb["layers"][0]["count"] == 2


def test_a_job_without_plugin_resources_is_launched_without_hres(cluster, users):
    started(cluster, "qpu")
    job = running(users["alice"], "")
    assert launch_payload(job)["job"].get("hres") is None


def test_the_run_epilog_of_the_other_nodes_carries_the_preps(cluster, users, monkeypatch):
    sent: list = []
    monkeypatch.setattr("cluster.publish.to_agents", sent.extend)  # caught on its way out
    cluster.script("qpu", hres_controller_job_prerun=PRERUN)
    started(cluster, "qpu")
    cfg = ClusterConfig.for_update()
    cfg.options = {**cfg.options, "Epilog": "/etc/slurm/epilog"}
    cfg.save(update_fields=["options"])
    job = running(users["alice"], "qpu:1", nodes="2", nodelist="node01,node02")
    finish(job.id)
    [payload] = [p for _n, p in sent if p["type"] == "run_epilog"]
    assert [p["payload"] for p in payload["job"]["hres"]] == [f"token={job.id}"]


def report(job: Job, what: str, *, drain: bool) -> None:
    msg = PrologEpilog(job_id=job.id, node=job.batch_host, run=job.restart_count, what=what,
                       error="hres/lua: qpu: hres_node_job_prolog returned 8100", drain=drain)  # fmt: skip
    prolog_epilog.report(msg=PrologEpilog.from_wire(msg.to_wire()))


def test_a_job_prolog_failure_requeues_the_job_held_and_drains_the_node(cluster, users):
    started(cluster, "qpu")
    job = running(users["alice"], "qpu:1")
    report(job, PrologEpilog.PROLOG_FAILED, drain=True)
    node = Node.objects.get(name=job.batch_host)
    assert (bool(node.flags & NodeFlag.DRAIN), node.reason) == (True, "Prolog error")
    job.refresh_from_db()
    assert (job.state, job.hold, job.restart_count) == (JobState.PENDING, "user", 1)


def test_a_job_prolog_remote_fail_requeues_the_job_and_leaves_the_node_up(cluster, users):
    started(cluster, "qpu")
    job = running(users["alice"], "qpu:1")
    report(job, PrologEpilog.PROLOG_FAILED, drain=False)
    assert not Node.objects.get(name=job.batch_host).flags & NodeFlag.DRAIN
    job.refresh_from_db()
    assert (job.state, job.restart_count) == (JobState.PENDING, 1)


def test_a_job_prolog_failure_cancels_a_job_that_cannot_be_requeued(cluster, users):
    started(cluster, "qpu")
    job = running(users["alice"], "qpu:1", requeue=False)
    report(job, PrologEpilog.PROLOG_FAILED, drain=False)
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED


def test_a_job_epilog_failure_drains_unless_remote_fail(cluster, users):
    started(cluster, "qpu")
    first = running(users["alice"], "qpu:1", nodelist="node01")
    second = running(users["alice"], "qpu:1", nodelist="node03")
    report(first, PrologEpilog.EPILOG_FAILED, drain=False)
    report(second, PrologEpilog.EPILOG_FAILED, drain=True)
    assert not Node.objects.get(name=first.batch_host).flags & NodeFlag.DRAIN
    node = Node.objects.get(name=second.batch_host)
    assert (bool(node.flags & NodeFlag.DRAIN), node.reason) == (True, "Epilog error")


def test_a_step_launch_carries_the_preps_too(cluster, users):
    from steps.services import _job_info  # what every step_launch's job is

    cluster.script("qpu", hres_controller_job_prerun=PRERUN)
    started(cluster, "qpu")
    job = running(users["alice"], "qpu:1")
    assert [p["payload"] for p in _job_info(job)["hres"]] == [f"token={job.id}"]
