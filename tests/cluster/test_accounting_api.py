"""``GET /api/accounting/jobs/`` (#16 point 7): who sees which jobs, the filters, the time
window, the steps derived from the job, and the pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cluster.models import Event, Job

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
URL = "/api/accounting/jobs/"


def epoch(when: datetime) -> str:
    return str(int(when.timestamp()))


def make(job_id: int, user: str = "alice", state: str = "COMPLETED", **kw) -> Job:
    fields = {
        "name": f"job{job_id}",
        "user": user,
        "account": "physics",
        "partition": "debug",
        "submit_time": T0,
        "eligible_time": T0,
        "start_time": T0 + timedelta(seconds=10),
        "end_time": T0 + timedelta(seconds=15),
        "node_list": "node01",
        "batch_host": "node01",
        "num_tasks": 2,
        "mem_per_node": 1000,
        "time_limit": 60,
        "state": state,
        **kw,
    }
    return Job.objects.create(id=job_id, **fields)


def get(api, who: str, **params) -> dict:
    answer = api(who).get(URL, {k: str(v) for k, v in params.items()})
    assert answer.status_code == 200, answer.content
    return answer.json()


def ids(body: dict) -> list[int]:
    return [j["job_id"] for j in body["jobs"]]


def test_a_completed_job_has_its_batch_step_with_the_job_s_times_node_and_exit(demo, api):
    make(10)
    make(11, state="FAILED", exit_code=1)
    body = get(api, "alice", job_id="10,11", all_users=1)
    done, failed = body["jobs"]
    assert (done["state"], done["exit_code"], done["exit_signal"], done["elapsed"]) == ("COMPLETED", 0, 0, 5)
    assert done["alloc_cpus"] == 2 and done["alloc_tres"] == "billing=2,cpu=2,mem=1000M,node=1"
    assert done["time_limit"] == 60 and done["node_list"] == "node01"
    [step] = done["steps"]
    assert step["step_id"] == "batch" and step["name"] == "batch"
    assert (step["state"], step["exit_code"], step["node_list"], step["elapsed"]) == (
        "COMPLETED",
        0,
        "node01",
        5,
    )
    assert step["start_time"] == done["start_time"] and step["end_time"] == done["end_time"]
    assert (failed["state"], failed["exit_code"], failed["steps"][0]["state"]) == ("FAILED", 1, "FAILED")
    assert body["next"] is None


def test_killed_jobs_exit_0_0_and_their_batch_step_is_cancelled_by_its_signal(demo, api):
    make(20, state="TIMEOUT", exit_signal=15)
    make(21, state="CANCELLED", exit_signal=15)
    Event.objects.create(
        time=T0,
        kind="job",
        job_id=21,
        old_state="RUNNING",
        new_state="RUNNING",
        reason="scancel",
        user="no-such-login-here",
    )
    make(22, state="CANCELLED", start_time=None, end_time=T0, batch_host="", node_list="")
    jobs = {j["job_id"]: j for j in get(api, "alice", job_id="20,21,22")["jobs"]}
    assert (jobs[20]["state"], jobs[20]["exit_code"], jobs[20]["exit_signal"]) == ("TIMEOUT", 0, 0)
    assert [(s["state"], s["exit_signal"]) for s in jobs[20]["steps"]] == [("CANCELLED", 15)]
    assert jobs[21]["cancelled_by"] == "no-such-login-here"
    assert (
        jobs[22]["steps"] == [] and jobs[22]["node_list"] == "None assigned" and jobs[22]["alloc_cpus"] == 0
    )
    assert jobs[20]["cancelled_by"] is None


def test_a_regular_user_sees_their_own_jobs_unless_they_ask_for_all(demo, api):
    make(30, user="alice")
    make(31, user="bob")
    window = {"start": epoch(T0 - timedelta(days=1))}
    assert ids(get(api, "alice", **window)) == [30]
    assert ids(get(api, "alice", all_users=1, **window)) == [30, 31]
    assert ids(get(api, "alice", user="bob", **window)) == [31]
    # An administrator too sees their own by default (only root's default is everyone's).
    assert ids(get(api, "admin", **window)) == []
    assert ids(get(api, "admin", all_users=1, **window)) == [30, 31]


def test_with_private_data_jobs_a_user_never_sees_another_s_jobs(private_data, api):
    private_data("jobs")
    make(40, user="alice")
    make(41, user="bob")
    assert ids(get(api, "alice", all_users=1)) == [40]
    assert ids(get(api, "alice", job_id=41)) == []
    assert ids(get(api, "admin", all_users=1)) == [40, 41]


def test_another_user_s_work_dir_is_not_shown(demo, api):
    make(45, user="bob", work_dir="/home/bob/secret")
    assert get(api, "alice", job_id=45, all_users=1)["jobs"][0]["work_dir"] is None
    assert get(api, "bob", job_id=45)["jobs"][0]["work_dir"] == "/home/bob/secret"


def test_the_time_window_and_state_filters_follow_slurmdbd(demo, api):
    make(50, end_time=T0 + timedelta(hours=1))  # ended in the window
    make(
        51,
        submit_time=T0 - timedelta(days=3),
        start_time=T0 - timedelta(days=3),
        end_time=T0 - timedelta(days=2),
    )  # ended before it
    make(52, state="RUNNING", end_time=None)  # still running
    make(53, state="PENDING", start_time=None, end_time=None, batch_host="", node_list="")
    make(54, submit_time=T0 + timedelta(days=5), start_time=None, end_time=None, state="PENDING")  # after it
    window = {"start": epoch(T0 + timedelta(minutes=1)), "end": epoch(T0 + timedelta(days=1)), "all_users": 1}
    assert ids(get(api, "alice", **window)) == [50, 52, 53]
    # -s R: running at some time in the window, whatever the state now.
    assert ids(get(api, "alice", state="R", **window)) == [50, 52]
    assert ids(get(api, "alice", state="cd", **window)) == [50]
    # -s PD: pending at some time in the window (50 and 52 had started before it).
    assert ids(get(api, "alice", state="PENDING", **window)) == [53]
    # -j: no window at all, with states too (slurmdbd's start of 0).
    assert ids(get(api, "alice", job_id="51,54", all_users=1)) == [51, 54]
    assert ids(get(api, "alice", job_id="51,54", state="CD", all_users=1)) == [51]


def test_array_parent_id_lists_every_task_and_one_task_by_its_id(demo, api):
    for task, job_id in enumerate((60, 61, 62)):
        make(job_id, array_job_id=60, array_task_id=task)
    assert ids(get(api, "alice", job_id=60)) == [60, 61, 62]
    assert ids(get(api, "alice", job_id="60_2")) == [62]
    assert ids(get(api, "alice", job_id="60_1.batch")) == [61]


def test_account_and_partition_filters(demo, api):
    make(70, account="physics")
    make(71, account="chem", partition="batch")
    assert ids(get(api, "alice", job_id="70,71", account="chem")) == [71]
    assert ids(get(api, "alice", job_id="70,71", partition="debug")) == [70]


def test_name_and_qos_filters(demo, api):
    """sacct --name and -q (src/sacct/options.c: jobname_list, qos_list)."""
    make(72, name="prep", qos="normal")
    make(73, name="solve", qos="high")
    make(74, name="prep", qos="high")
    assert ids(get(api, "alice", job_id="72,73,74", name="prep")) == [72, 74]
    assert ids(get(api, "alice", job_id="72,73,74", qos="high")) == [73, 74]
    assert ids(get(api, "alice", job_id="72,73,74", name="solve,nosuch", qos="high")) == [73]


def test_pages_follow_the_cursor_to_the_end(demo, api):
    for job_id in range(100, 107):
        make(job_id)
    seen, after = [], 0
    while True:
        body = get(api, "alice", job_id=",".join(str(i) for i in range(100, 107)), limit=3, after=after)
        seen += ids(body)
        if body["next"] is None:
            break
        after = body["next"]
    assert seen == list(range(100, 107))


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"state": "NOPE"}, "state", "unrecognized job state value NOPE"),
        ({"start": "yesterday"}, "start", "Invalid start"),
        ({"limit": "-1"}, "limit", "Invalid limit"),
        ({"job_id": "12x"}, "job_id", "Invalid job id specified"),
        ({"start": "200", "end": "100"}, "start", "Start time requested is after end time"),
    ],
)
def test_bad_parameters_are_refused_with_a_400_naming_them(demo, api, params, field, words):
    answer = api("alice").get(URL, params)
    assert answer.status_code == 400
    assert words in answer.json()["error"]


def test_without_a_token_the_answer_is_401(demo, api):
    assert api(None).get(URL).status_code == 401


@pytest.mark.parametrize(
    "params",
    [
        {"start": "9" * 30},
        {"end": "253402300800"},
        {"after": str(2**63)},
        {"limit": "99999"},
        {"user": "a\x00b"},
        {"job_id": "1" * 40},
        {"job_id": "5_" + "9" * 30},
        {"state": "," * 5000},
    ],
)
def test_odd_parameters_never_make_a_500(demo, api, params):
    assert api("alice").get(URL, params).status_code in (200, 400)


def test_nodelist_keeps_the_jobs_that_ran_on_any_of_the_nodes(demo, api):
    """sacct -N node_list (src/sacct/options.c: a ranged hostlist); a page cut short by the
    filter still hands on the cursor of the last job it read."""
    make(80, node_list="node[01-02]")
    make(81, node_list="node03")
    make(82, node_list="", state="PENDING", start_time=None, end_time=None)
    make(83, node_list="node02")
    assert ids(get(api, "alice", job_id="80,81,82,83", nodelist="node02")) == [80, 83]
    assert ids(get(api, "alice", job_id="80,81,82,83", nodelist="node[03-04]")) == [81]
    body = get(api, "alice", job_id="80,81,82,83", nodelist="node03", limit=1)
    assert (ids(body), body["next"]) == ([], 80)
    answer = api("alice").get(URL, {"nodelist": "node[01-"})
    assert answer.status_code == 400 and "Invalid node name specified" in answer.json()["error"]


def test_nodelist_may_name_nodes_beyond_the_cluster_s_but_not_without_bound(demo, api):
    make(84, node_list="gone07")
    assert ids(get(api, "alice", job_id="84", nodelist="gone[01-99]")) == [84]
    answer = api("alice").get(URL, {"nodelist": "n[1-999999999]"})
    assert answer.status_code == 400 and "more than" in answer.json()["error"]


def test_node_cpu_and_time_limit_ranges_follow_slurmdbd(demo, api):
    """sacct -i, -I, -k/-K (as_mysql_jobacct_process.c): nodes and CPUs allocated (a job
    never started has none), a minimum alone is that count exactly, a job without a time
    limit holds INFINITE."""
    make(90, node_list="node[01-02]", num_tasks=4)
    make(91, node_list="node03", num_tasks=2, time_limit=30)
    make(92, state="PENDING", start_time=None, end_time=None, node_list="", num_tasks=2)
    make(93, node_list="node04", num_tasks=1, time_limit=None)
    jobs = {"job_id": "90,91,92,93"}
    assert ids(get(api, "alice", nnodes="2", **jobs)) == [90]
    assert ids(get(api, "alice", nnodes="1", **jobs)) == [91, 93]
    assert ids(get(api, "alice", nnodes="1-2", **jobs)) == [90, 91, 93]
    assert ids(get(api, "alice", ncpus="2", **jobs)) == [91]
    assert ids(get(api, "alice", ncpus="1-4", **jobs)) == [90, 91, 93]
    assert ids(get(api, "alice", ncpus="4-1", **jobs)) == []
    assert ids(get(api, "alice", timelimit="30", **jobs)) == [91]
    assert ids(get(api, "alice", timelimit="31-UNLIMITED", **jobs)) == [90, 92, 93]
    assert ids(get(api, "alice", timelimit="UNLIMITED", **jobs)) == [93]
    answer = api("alice").get(URL, {"nnodes": "two"})
    assert answer.status_code == 400 and "Invalid nnodes" in answer.json()["error"]
    answer = api("alice").get(URL, {"ncpus": "1-UNLIMITED"})
    assert answer.status_code == 400 and "Invalid ncpus" in answer.json()["error"]
