"""sdiag's and sprio's figures through the API (#13 point 10): real scheduler passes run by
the cycles, counted in the shared row; the priority factors of the scheduler's own
multifactor object."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster import cycles
from cluster.models import Job
from cluster.services import agents, diagnostics
from cluster.services.configuration import config_load
from cluster.services.jobs import job_cancel, job_submit
from cluster.services.nodes import node_update

NODES = [f"node{i:02d}" for i in range(1, 33)]
WEIGHTS = (
    "PriorityWeightAge=1000\nPriorityWeightJobSize=100000\nPriorityWeightPartition=10000\n"
    "PriorityWeightQOS=0\nPriorityWeightFairshare=0\n"
)


def register():
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )


def submit(user, **spec):
    return job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]


def diag(api, who="alice"):
    answer = api(who).get("/api/diag/")
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_passes_run_by_the_cycles_are_counted(demo, users, api):
    register()
    before = diag(api)
    assert before["schedule"]["cycle_counter"] == 0 and before["backfill"]["cycle_counter"] == 0
    # debug's 8 nodes, whole: the next job waits, examined by each later pass.
    running = submit(users["alice"], nodes="8", cpus_per_task=4)
    cycles.run_schedule()
    waiting = submit(users["alice"])
    cycles.run_schedule()
    cycles.run_backfill()
    after = diag(api)
    main, bf = after["schedule"], after["backfill"]
    assert main["cycle_counter"] == 2
    assert main["cycle_sum"] >= main["cycle_max"] >= main["cycle_last"] > 0
    assert main["cycle_depth"] == 1 + 1  # each pass read one pending job
    assert bf["cycle_counter"] == 1 and bf["cycle_last"] > 0 and bf["last_cycle_when"]
    assert (bf["last_depth"], bf["queue_len"], bf["backfilled_jobs"]) == (1, 1, 0)
    assert bf["last_depth_try"] == bf["depth_try_sum"] == 1  # backfill tried to place it
    assert Job.objects.get(pk=waiting).state == "PENDING"
    assert after["jobs"] == {"submitted": 2, "started": 1, "completed": 0, "canceled": 0, "failed": 0}
    assert (after["jobs_pending"], after["jobs_running"]) == (1, 1)
    # The launch was sent, and no agent reported it started yet: the agent queue.
    assert after["agent_queue_size"] == 1
    job_cancel(actor=users["alice"], job_id=waiting)
    assert diag(api)["jobs"]["canceled"] == 1
    assert Job.objects.get(pk=running).state == "RUNNING"


def test_backfilled_jobs_are_those_backfill_started_ahead(demo, users, api):
    register()
    submit(users["alice"], nodes="4", cpus_per_task=4, time="30")
    cycles.run_schedule()
    big = submit(users["alice"], nodes="8", cpus_per_task=4)  # waits for the first to end
    small = submit(users["alice"], nodes="1", cpus_per_task=4, time="5")
    cycles.run_schedule()
    assert Job.objects.get(pk=small).state == "PENDING"  # the main pass keeps the order
    cycles.run_backfill()
    assert Job.objects.get(pk=small).state == "RUNNING"
    assert Job.objects.get(pk=big).state == "PENDING"
    bf = diag(api)["backfill"]
    assert (bf["backfilled_jobs"], bf["cycle_counter"], bf["last_depth"]) == (1, 1, 2)
    # scontrol's Scheduler=Backfill and LastSchedEval=: which pass started a job, and when
    # a pending one was last weighed (the last pass).
    jobs = {j["job_id"]: j for j in api("alice").get("/api/jobs/", {"start": "1"}).json()["results"]}
    started = Job.objects.get(pk=small)
    assert (jobs[small]["started_by_backfill"], jobs[small]["last_sched_eval"]) == (
        True,
        started.start_time.isoformat().replace("+00:00", "Z"),
    )
    first = min(jobs)
    assert jobs[first]["started_by_backfill"] is False and jobs[first]["last_sched_eval"]
    assert jobs[big]["last_sched_eval"] == diagnostics.last_pass_time().isoformat()
    held = submit(users["alice"], hold=True)
    shown = api("alice").get(f"/api/jobs/{held}/", {"start": "1"}).json()
    assert shown["last_sched_eval"] is None  # held: no pass weighs it


def test_a_pass_is_counted_with_one_statement(demo, users):
    diagnostics.record_pass(diagnostics.PassFigures(elapsed_us=5, depth=1), backfill=False)
    with CaptureQueriesContext(connection) as queries:
        figures = diagnostics.PassFigures(elapsed_us=7, depth=2, backfilled=1, tried=2)
        diagnostics.record_pass(figures, backfill=True)
    assert len(queries.captured_queries) == 1
    assert queries.captured_queries[0]["sql"].lstrip().upper().startswith("UPDATE")


def test_figures_start_again_at_midnight_utc(demo, users):
    yesterday = datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
    today = yesterday + timedelta(minutes=2)
    diagnostics.reset(now=yesterday - timedelta(hours=1))
    diagnostics.record_pass(diagnostics.PassFigures(elapsed_us=900, depth=4), backfill=False, now=yesterday)
    assert diagnostics.statistics(server_threads=1, now=yesterday)["schedule"]["cycle_max"] == 900
    seen = diagnostics.statistics(server_threads=1, now=today)
    assert seen["req_time_start"] == datetime(2026, 3, 2, tzinfo=UTC)
    assert seen["schedule"]["cycle_counter"] == 0
    diagnostics.record_pass(diagnostics.PassFigures(elapsed_us=30, depth=1), backfill=False, now=today)
    seen = diagnostics.statistics(server_threads=1, now=today)
    assert (seen["schedule"]["cycle_counter"], seen["schedule"]["cycle_max"]) == (1, 30)


def test_reset_is_for_administrators(demo, users, api):
    register()
    submit(users["alice"])
    cycles.run_schedule()
    refused = api("alice").post("/api/diag/reset/")
    assert refused.status_code == 403
    assert diag(api)["schedule"]["cycle_counter"] == 1
    done = api("admin").post("/api/diag/reset/")
    assert done.status_code == 200 and done.json()["message"] == "Reset scheduling statistics"
    after = diag(api)
    assert after["schedule"]["cycle_counter"] == 0
    assert after["jobs"]["submitted"] == 0 and after["jobs"]["started"] == 0
    assert after["jobs_running"] == 1  # a count of now, not since the reset


@pytest.fixture
def weighted(db, settings, conf_dir):
    conf = conf_dir / "slurm.conf"
    conf.write_text(conf.read_text() + WEIGHTS)
    settings.CONF_DIR = conf_dir
    return config_load(path=conf)


def test_priority_factors_are_the_schedulers(weighted, users, api):
    # Every node drained: the jobs wait, eligible (sprio shows them).
    register()
    node_update(actor=users["admin"], nodes="node[01-32]", state="DRAIN", reason="test")
    small = submit(users["alice"])
    wide = submit(users["bob"], nodes="4", partition="long")
    later = submit(users["bob"], begin="now+3600")  # not eligible yet: sprio leaves it out
    cycles.run_schedule()
    answer = api("alice").get("/api/priority/")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["priority_type"] == "priority/multifactor"
    assert body["weights"] == {
        "age": 1000,
        "fairshare": 0,
        "jobsize": 100000,
        "partition": 10000,
        "qos": 0,
        "tres": "",
    }
    jobs = {j["job_id"]: j for j in body["jobs"]}
    assert set(jobs) == {small, wide} and later not in jobs
    # long's PriorityJobFactor=2 is the highest: its factor is 1, debug's 1/2.
    assert jobs[wide]["partition_factor"] == 10000 and jobs[small]["partition_factor"] == 5000
    # 4 of 36 nodes against 1 CPU of 144 for the small one.
    assert jobs[wide]["jobsize"] == pytest.approx(100000 * 4 / 36)
    assert (jobs[wide]["user"], jobs[wide]["partition"]) == ("bob", "long")
    for job_id, job in jobs.items():
        total = job["age"] + job["fairshare"] + job["jobsize"] + job["partition_factor"] + job["qos"]
        assert job["priority"] == int(total)
        assert Job.objects.get(pk=job_id).priority == job["priority"]  # squeue's %Q
    only = api("alice").get("/api/priority/", {"user": "bob"}).json()["jobs"]
    assert [j["job_id"] for j in only] == [wide]
    only = api("alice").get("/api/priority/", {"job_id": str(small)}).json()["jobs"]
    assert [j["job_id"] for j in only] == [small]


def test_priority_factors_refuse_a_bad_job_id(weighted, users, api):
    answer = api("alice").get("/api/priority/", {"job_id": "12,x"})
    assert answer.status_code == 400
    assert answer.json()["error"] == "Invalid job id: x"


def test_priority_factors_under_priority_basic(demo_basic, users, api):
    body = api("alice").get("/api/priority/").json()
    assert body == {"priority_type": "priority/basic", "weights": None, "jobs": []}
