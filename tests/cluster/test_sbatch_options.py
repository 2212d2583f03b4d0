"""sbatch --comment, --open-mode, --time-min, --signal and --mem-per-cpu in the controller
(#16 point 6): validated with sbatch's messages, stored, shown by the API, carried to the
agent, and memory charged per CPU by the scheduler."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.models import Job
from cluster.services import agents
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from cluster.services.state import launch_payload


def test_the_options_are_stored_shown_and_launched(demo, users, api):
    spec = {
        "wrap": "true",
        "time": "10",
        "comment": "run 3 of the sweep",
        "open_mode": "A",
        "time_min": "0:30",
        "signal": "B:USR1@120",
    }
    answer = api("alice").post("/api/jobs/", spec, format="json")
    assert answer.status_code == 201, answer.content
    job_id = answer.json()["job_id"]
    shown = api("alice").get(f"/api/jobs/{job_id}/").json()
    assert (shown["comment"], shown["open_mode"], shown["time_min"], shown["signal"]) == (
        "run 3 of the sweep",
        "append",
        1,  # seconds round up to a minute, as --time does
        "B:10@120",
    )
    wire = launch_payload(Job.objects.get(pk=job_id))["job"]
    assert (wire["open_mode"], wire["signal"], wire["time_limit"]) == ("append", "B:10@120", 10)


def test_a_job_without_them_launches_as_before(demo, users, api):
    answer = api("alice").post("/api/jobs/", {"wrap": "true"}, format="json")
    job = Job.objects.get(pk=answer.json()["job_id"])
    assert (job.comment, job.open_mode, job.time_min, job.signal) == ("", "", None, "")
    wire = launch_payload(job)["job"]
    assert "open_mode" not in wire and "signal" not in wire


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("open_mode", "x", "Invalid --open-mode argument: x. Ignored"),
        ("signal", "USR9@10", "Invalid --signal specification: USR9@10"),
        ("signal", "X:USR1", "Invalid --signal specification: X:USR1"),
        ("signal", "USR1@70000", "Invalid --signal specification: USR1@70000"),
        ("time_min", "soon", "Invalid time-min specification: soon"),
        ("time_min", "20", "Invalid time-min specification (exceeds job's time or other limits)"),
        ("comment", "a\nb", "Invalid --comment specification: a\\nb has a control character"),
    ],
)
@pytest.mark.usefixtures("demo", "users")
def test_bad_values_are_refused_naming_the_option(api, field, value, error):
    before = Job.objects.count()
    answer = api("alice").post("/api/jobs/", {"wrap": "true", "time": "10", field: value}, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"] == error
    assert Job.objects.count() == before


def _register():
    agents.agent_register(
        agent_id="test:1",
        nodes=[
            {"name": f"node{i:02d}", "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for i in range(1, 33)
        ],
        running=[],
        completions=[],
    )


def _submit(user, **spec) -> int:
    return job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]


def test_mem_per_cpu_is_charged_per_cpu_on_each_node(demo, users):
    one = Job.objects.get(pk=_submit(users["alice"], ntasks=3, mem_per_cpu="500"))
    assert (one.mem_per_cpu, one.mem_per_node) == (500, 1500)
    # Four tasks of two CPUs over two nodes: four CPUs on each, 4 x 200 MB.
    spread = Job.objects.get(
        pk=_submit(users["alice"], nodes="2", ntasks=4, cpus_per_task=2, mem_per_cpu="200")
    )
    assert spread.mem_per_node == 800
    answer = Job.objects.get(pk=_submit(users["alice"], mem_per_cpu="1G"))
    assert answer.mem_per_cpu == 1024


def test_the_scheduler_fills_a_node_by_the_memory_per_cpu(demo, users):
    _register()
    big = _submit(users["alice"], nodelist="node01", ntasks=1, mem_per_cpu="1500")
    small = _submit(users["alice"], nodelist="node01", ntasks=1, mem_per_cpu="600")
    fits = _submit(users["alice"], nodelist="node01", ntasks=1, mem_per_cpu="500")
    schedule_pass()
    states = dict(Job.objects.filter(pk__in=[big, small, fits]).values_list("id", "state"))
    # node01 has 4 CPUs and 2000 MB: 1500 + 600 does not fit, 1500 + 500 does.
    assert states == {big: "RUNNING", small: "PENDING", fits: "RUNNING"}
    assert Job.objects.get(pk=big).alloc == {"node01": [1, 1500]}


@pytest.mark.usefixtures("demo", "users")
def test_mem_and_mem_per_cpu_are_mutually_exclusive(api):
    answer = api("alice").post(
        "/api/jobs/", {"wrap": "true", "mem": "1G", "mem_per_cpu": "1G"}, format="json"
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
    bad = api("alice").post("/api/jobs/", {"wrap": "true", "mem_per_cpu": "lots"}, format="json")
    assert bad.json()["error"] == "Invalid --mem-per-cpu specification: lots"


def test_ntasks_per_node_spreads_the_tasks_over_enough_nodes(demo, users):
    _register()
    spread = _submit(users["alice"], ntasks=8, ntasks_per_node=2)
    each = _submit(users["alice"], nodes="2", ntasks_per_node=3)
    schedule_pass()
    job = Job.objects.get(pk=spread)
    assert (job.state, job.min_nodes, job.ntasks_per_node) == ("RUNNING", 4, 2)
    assert sorted(cpus for cpus, _mem in job.alloc.values()) == [2, 2, 2, 2]
    job = Job.objects.get(pk=each)
    assert (job.num_tasks, job.min_nodes) == (6, 2)
    assert sorted(cpus for cpus, _mem in job.alloc.values()) == [3, 3]
    assert launch_payload(job)["job"]["ntasks_per_node"] == 3


@pytest.mark.usefixtures("demo", "users")
def test_ntasks_per_node_beyond_the_node_count_is_refused(api):
    spec = {"wrap": "true", "nodes": "1", "ntasks": "4", "ntasks_per_node": "2"}
    answer = api("alice").post("/api/jobs/", spec, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"] == "Requested node configuration is not available"
    bad = api("alice").post("/api/jobs/", {"wrap": "true", "ntasks_per_node": "0"}, format="json")
    assert bad.json()["error"].startswith("Invalid --ntasks-per-node specification: 0")


def test_a_job_that_cannot_end_by_its_deadline_ends_deadline(demo, users):
    now = timezone.now()
    late = _submit(users["alice"], hold=True, time="10", deadline="now+300")
    timely = _submit(users["alice"], hold=True, time="10", time_min="2", deadline="now+3600")
    schedule_pass(now=now)
    job = Job.objects.get(pk=late)
    # Ten minutes from now is past a deadline five minutes away.
    assert (job.state, job.reason, job.end_time) == ("DEADLINE", "DeadLine", now)
    assert Job.objects.get(pk=timely).state == "PENDING"
    # 59 minutes on, its --time-min of 2 no longer fits either.
    schedule_pass(now=now + timedelta(minutes=59))
    assert Job.objects.get(pk=timely).state == "DEADLINE"


@pytest.mark.usefixtures("demo", "users")
def test_bad_deadlines_are_refused(api):
    spec = {"wrap": "true", "begin": "now+7200", "deadline": "now+3600"}
    answer = api("alice").post("/api/jobs/", spec, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"] == "Incompatible begin and deadline time specification"
    bad = api("alice").post("/api/jobs/", {"wrap": "true", "deadline": "someday"}, format="json")
    assert bad.json()["error"] == "Invalid deadline specification: someday"


def test_get_user_env_is_stored_and_launched(demo, users, api):
    answer = api("alice").post("/api/jobs/", {"wrap": "true", "get_user_env": "20"}, format="json")
    assert answer.status_code == 201, answer.content
    job = Job.objects.get(pk=answer.json()["job_id"])
    assert launch_payload(job)["job"]["get_user_env"] == "20L"
    bad = api("alice").post("/api/jobs/", {"wrap": "true", "get_user_env": "soon"}, format="json")
    assert bad.json()["error"] == "Invalid --get-user-env specification: soon"
