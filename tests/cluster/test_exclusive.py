"""``sbatch --exclusive``: a whole-node allocation, as in Slurm (#13 point 7). The job
gets every CPU and all the memory of each node it is given, only nodes with nothing
allocated, and no other job shares them; squeue and scontrol show the CPUs allocated and
``OverSubscribe=NO``."""

from __future__ import annotations

import pytest

from cli import scontrol, squeue
from cli.sbatch import build_request, parse_args
from cluster.core.scheduler import JobView, NodeView, PartitionView, Snapshot, schedule
from cluster.core.states import JobState, NodeBase
from cluster.models import Job
from cluster.services import agents
from cluster.services.scheduling import schedule_pass

NOW = 1_000_000.0


def nodes(count: int = 3) -> tuple[NodeView, ...]:
    return tuple(NodeView(i, f"n{i}", 4, 2000, 1, NodeBase.IDLE, 0) for i in range(count))


def snapshot(pending, running=(), count: int = 3) -> Snapshot:
    part = PartitionView("p", tuple(range(count)))
    return Snapshot(NOW, nodes(count), {"p": part}, tuple(pending), tuple(running))


def job(job_id: int, **kw) -> JobView:
    return JobView(job_id=job_id, partition="p", user="u", submit_time=NOW - job_id, time_limit=10, **kw)


def busy(job_id: int, node: int, cpus: int = 1, mem: int = 0) -> JobView:
    return job(job_id, state=JobState.RUNNING, start_time=NOW, node_indices=(node,), alloc_cpus=(cpus,),
               alloc_mem=(mem,))  # fmt: skip


def test_an_exclusive_job_takes_a_whole_free_node_and_shares_it_with_no_one() -> None:
    result = schedule(snapshot([job(1, exclusive=True), job(2), job(3)], running=[busy(9, 0)]))
    starts = {s.job_id: s for s in result.starts}
    # n0 runs a 1-CPU job: not free. n1 is taken whole: 4 CPUs and 2000 MB.
    assert (starts[1].node_indices, starts[1].cpus_per_node, starts[1].mem_per_node) == ((1,), (4,), (2000,))
    assert {starts[2].node_indices, starts[3].node_indices} <= {(0,), (2,)}


def test_an_exclusive_job_waits_for_nodes_with_nothing_on_them() -> None:
    running = [busy(8, 0), busy(9, 1)]
    result = schedule(snapshot([job(1, exclusive=True, min_nodes=2, num_tasks=2)], running=running))
    assert not result.starts and result.pending[0].reason == "Resources"
    # Backfill plans it when the small jobs end (their TimeLimit, 10 minutes).
    assert result.pending[0].start_time == NOW + 600


def test_nothing_else_starts_on_a_node_an_exclusive_job_holds() -> None:
    held = job(7, exclusive=True, state=JobState.RUNNING, start_time=NOW, node_indices=(0,), alloc_cpus=(4,),
               alloc_mem=(2000,))  # fmt: skip
    result = schedule(snapshot([job(1, req_nodes=frozenset({"n0"}))], running=[held]))
    assert not result.starts and result.pending[0].reason == "Resources"


# --------------------------------------------------------------------------- end to end


@pytest.mark.django_db
def test_sbatch_exclusive_gets_whole_nodes_and_scontrol_says_oversubscribe_no(demo, users, api) -> None:
    info = [{"name": f"node0{i}", "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for i in (1, 2)]
    agents.agent_register(agent_id="t:1", nodes=info, running=[], completions=[])
    opts = vars(parse_args(["--exclusive", "-n", "1", "-p", "debug", "--wrap", "sleep 1"]))
    body = build_request(opts, script=None, script_name=None, script_args=[], environ={}, cwd="/tmp")
    assert body["exclusive"] is True
    exclusive = api("alice").post("/api/jobs/", body, format="json").json()["job_id"]
    small = api("alice").post("/api/jobs/", {**body, "exclusive": False}, format="json").json()["job_id"]
    schedule_pass()
    whole, other = Job.objects.get(pk=exclusive), Job.objects.get(pk=small)
    assert whole.state == other.state == "RUNNING"
    assert whole.alloc == {"node01": [4, 2000]}  # every CPU and all the memory
    assert other.node_list == "node02"  # not on the exclusive job's node

    shown = api("alice").get(f"/api/jobs/{exclusive}/").json()
    assert (shown["num_cpus"], shown["exclusive"], shown["oversubscribe"]) == (4, "NODE", "NO")
    text = scontrol.render_record(scontrol.job_record(shown))
    assert "OverSubscribe=NO" in text and "NumCPUs=4" in text
    assert squeue.format_jobs([shown], "%h %C", header=False) == ["NO 4"]
    plain = api("alice").get(f"/api/jobs/{small}/").json()
    assert squeue.format_jobs([plain], "%h %C", header=False) == ["OK 1"]


@pytest.mark.django_db
def test_exclusive_and_oversubscribe_together_are_refused(demo, users, api) -> None:
    body = {"wrap": "true", "work_dir": "/tmp", "exclusive": True, "oversubscribe": True}
    answer = api("alice").post("/api/jobs/", body, format="json")
    assert answer.status_code == 400
    assert "--exclusive and --oversubscribe are mutually exclusive" in str(answer.json())
    assert not Job.objects.exists()
