"""A job's nice (#14 point 6) in the cluster core: the submission field (API), priority/basic
taking it off the priority as Slurm's basic plugin does, and ``scontrol update Nice=`` (the
owner any value from 0 up, an operator a negative one; a running job's priority moves by the
difference at once under priority/basic), recorded with what it was."""

from __future__ import annotations

from cluster.core import scheduler
from cluster.models import Event, Job
from cluster.services import agents
from cluster.services.jobs import job_submit, job_update
from cluster.services.nodes import node_update
from cluster.services.scheduling import schedule_pass
from slurmwords.nice import MAX_NICE


def register():
    agents.agent_register(
        agent_id="test:1",
        nodes=[
            {"name": f"node{i:02d}", "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for i in range(1, 33)
        ],
        running=[],
        completions=[],
    )


def submit(user, **spec) -> int:
    return job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]


def test_priority_basic_takes_the_nice_off():
    part = scheduler.PartitionView(name="p", node_indices=(0,))
    plain = scheduler.JobView(job_id=7, partition="p", user="u", submit_time=0.0)
    niced = scheduler.JobView(job_id=7, partition="p", user="u", submit_time=0.0, nice=40)
    assert scheduler.job_priority(plain, part, 0.0) - scheduler.job_priority(niced, part, 0.0) == 40
    # Never below 1 (0 is a held job's), and a negative nice raises it.
    late = scheduler.JobView(scheduler.TOP_PRIORITY - 5, "p", "u", 0.0, nice=40)  # a base of 5
    assert scheduler.job_priority(late, None, 0.0) == 1
    boosted = scheduler.JobView(7, "p", "u", 0.0, nice=-5)
    assert scheduler.job_priority(boosted, part, 0.0) == scheduler.job_priority(plain, part, 0.0) + 5


def test_the_pass_orders_by_the_priority_less_the_nice(demo_basic, users):
    first = submit(users["alice"], begin="now+3600", nice=10)
    second = submit(users["alice"], begin="now+3600")
    schedule_pass()
    prio = dict(Job.objects.filter(pk__in=[first, second]).values_list("id", "priority"))
    # Submit order gives the first 1 more; its nice of 10 puts it 9 below the second.
    assert prio[second] - prio[first] == 9


def test_the_api_takes_and_shows_the_nice(demo, users, api):
    answer = api("alice").post("/api/jobs/", {"wrap": "true", "nice": 12, "array": "1-2"}, format="json")
    assert answer.status_code == 201, answer.content
    for job_id in answer.json()["job_ids"]:
        assert api("alice").get(f"/api/jobs/{job_id}/").json()["nice"] == 12
    refused = api("alice").post("/api/jobs/", {"wrap": "true", "nice": -1}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"] == "Invalid --nice value"
    for bad in (MAX_NICE + 1, True, "1.5", [1]):
        answer = api("admin").post("/api/jobs/", {"wrap": "true", "nice": bad}, format="json")
        assert answer.status_code == 400, bad
        assert answer.json()["error"].startswith("Invalid --nice value")
    assert Job.objects.count() == 2
    assert api("admin").post("/api/jobs/", {"wrap": "true", "nice": "-3"}, format="json").status_code == 201


def test_update_nice_of_a_running_job_moves_its_priority_under_basic(demo_basic, users):
    register()
    job_id = submit(users["alice"])
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    started = job.priority
    job_update(actor=users["alice"], job_id=job_id, changes={"nice": 30})
    job = Job.objects.get(pk=job_id)
    assert (job.nice, job.priority) == (30, started - 30)
    event = Event.objects.filter(job_id=job_id).latest("id")
    assert event.reason == "update nice,priority" and event.user == "alice"
    assert event.detail == {
        "before": {"nice": 0, "priority": started},
        "after": {"nice": 30, "priority": started - 30},
    }
    job_update(actor=users["admin"], job_id=job_id, changes={"nice": -20})
    assert Job.objects.get(pk=job_id).priority == started + 20


def test_a_held_job_keeps_its_priority_of_0(demo, users):
    job_id = submit(users["alice"], hold=True)
    job_update(actor=users["alice"], job_id=job_id, changes={"nice": 5})
    job = Job.objects.get(pk=job_id)
    assert (job.nice, job.priority, job.reason) == (5, 0, "JobHeldUser")


def test_multifactor_without_weights_gives_every_job_1(demo, users, api):
    # The demo's PriorityType=priority/multifactor (Slurm's default) with no PriorityWeight*:
    # every factor weighs 0, so a job's priority is 1 less its nice, at least 1, as
    # slurmctld computes it; the pass then goes by tier and job id. The nodes drained: the
    # jobs wait, eligible (sprio shows them).
    node_update(actor=users["admin"], nodes="node[01-32]", state="DRAIN", reason="test")
    first = submit(users["alice"], nice=10)
    second = submit(users["alice"])
    boosted = job_submit(user=users["admin"], spec={"wrap": "true", "work_dir": "/tmp", "nice": -5})
    schedule_pass()
    prio = dict(Job.objects.filter(pk__in=[first, second, boosted.job_ids[0]]).values_list("id", "priority"))
    assert prio == {first: 1, second: 1, boosted.job_ids[0]: 5}
    body = api("alice").get("/api/priority/").json()
    assert body["priority_type"] == "priority/multifactor"
    assert {j["job_id"]: j["priority"] for j in body["jobs"]} == prio


def test_a_weightless_pass_gathers_only_the_nice(demo, users):
    # With no weight every term is 0: the pass's priority reads nothing about the jobs but
    # their nice (the accounts, QOS, accrue times, fair shares a weighted sum needs were
    # gathered for every pending job, half again the pass's time at 1,000 pending).
    from cluster import clock
    from cluster.services.scheduling import build_snapshot
    from limits import services

    niced = submit(users["alice"], begin="now+3600", nice=3)
    plain = submit(users["alice"], begin="now+3600")
    snap, _names = build_snapshot(clock.now())
    prio = services.pass_priority(snap, ())["priority"]
    assert prio.weightless and set(prio.info) == {niced}
    views = {j.job_id: j for j in snap.pending}
    assert prio(views[plain], None, snap.now) == 1
    assert prio(views[niced], None, snap.now) == 1
