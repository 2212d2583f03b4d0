"""``--from-history DAYS`` (#18 point 2): the cluster's own finished jobs, fetched from a
live controller's accounting API as ``fsched sacct`` fetches them, written as a job list
that the simulator's reader takes back with each job's request and what it did."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cli.client import ApiError, Client
from cli.simulate_history import history_query, history_workload
from simulator.records import SimJob
from simulator.workloads import read_workload


@pytest.fixture
def history(transactional_db):
    """Jobs of the last days, as the controller keeps them after they ended."""
    from cluster.models import Job

    now = timezone.now().replace(microsecond=0)
    t0 = now - timedelta(hours=5)

    def make(job_id: int, state: str, submit: int, start: int | None, end: int | None, **kw) -> None:
        Job.objects.create(
            id=job_id,
            name=kw.pop("name", f"job{job_id}"),
            user=kw.pop("user", "alice"),
            account=kw.pop("account", "physics"),
            partition=kw.pop("partition", "batch"),
            submit_time=t0 + timedelta(seconds=submit),
            eligible_time=t0 + timedelta(seconds=submit),
            start_time=None if start is None else t0 + timedelta(seconds=start),
            end_time=None if end is None else t0 + timedelta(seconds=end),
            node_list="node01" if start is not None else "",
            state=state,
            **kw,
        )

    make(
        101, "COMPLETED", 0, 10, 130, min_nodes=2, num_tasks=8, cpus_per_task=2, mem_per_node=4096,
        time_limit=60, licenses="power:1000,fluent:1", qos="high",
    )  # fmt: skip
    make(102, "TIMEOUT", 30, 40, 640, time_limit=10, user="bob", account="chemistry")
    make(103, "FAILED", 45, 50, 55, exit_code=3, name="")
    make(104, "CANCELLED", 60, None, 70)  # cancelled while pending: never ran
    make(105, "COMPLETED", -3 * 86400, -3 * 86400 + 5, -3 * 86400 + 50)  # ended three days ago
    make(106, "RUNNING", 80, 90, None)  # not finished
    return now


def test_history_is_a_job_list_of_the_finished_jobs_with_their_requests(
    history, live_server, users, tmp_path
):
    from cluster.services.api_tokens import token_issue

    client = Client(url=live_server.url, token=token_issue(users["admin"])[1])
    out = history_workload(client, 1, tmp_path / "history.json")
    assert out == tmp_path / "history.json"
    jobs = {j.job_id: j for j in read_workload(out)}
    assert sorted(jobs) == [101, 102, 103]  # in the window, finished, and ran
    assert jobs[101] == SimJob(
        job_id=101,
        submit=0.0,
        run_time=120.0,
        user="alice",
        account="physics",
        partition="batch",
        qos="high",
        nodes=2,
        ntasks=8,
        cpus_per_task=2,
        mem_mb=4096,
        time_limit=60,
        licenses="power:1000,fluent:1",
        name="job101",
    )
    timeout = jobs[102]
    assert (timeout.submit, timeout.run_time, timeout.time_limit) == (30.0, 600.0, 10)
    assert (timeout.user, timeout.account, timeout.qos) == ("bob", "chemistry", "normal")
    failed = jobs[103]
    assert (failed.submit, failed.run_time, failed.exit_code, failed.name) == (45.0, 5.0, 3, "")
    assert (failed.nodes, failed.ntasks, failed.mem_mb, failed.licenses) == (1, 1, 0, "")

    longer = {j.job_id for j in read_workload(history_workload(client, 4, tmp_path / "four.json"))}
    assert longer == {101, 102, 103, 105}


def test_a_user_exports_the_jobs_they_may_see(history, live_server, users, tmp_path):
    """The accounting API's PrivateData rules apply: the export is no way around them."""
    from cluster.services.api_tokens import token_issue

    client = Client(url=live_server.url, token=token_issue(users["bob"])[1])
    jobs = read_workload(history_workload(client, 1, tmp_path / "bob.json"))
    assert {j.job_id for j in jobs} <= {101, 102, 103} and 102 in {j.job_id for j in jobs}


def test_an_unauthenticated_export_is_refused_and_writes_nothing(history, live_server, tmp_path):
    with pytest.raises(ApiError):
        history_workload(Client(url=live_server.url, token="not-a-token"), 1, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_an_empty_window_writes_an_empty_list(history, live_server, users, tmp_path):
    from cluster.services.api_tokens import token_issue

    client = Client(url=live_server.url, token=token_issue(users["admin"])[1])
    out = history_workload(client, 1, tmp_path / "none.json", now=history.timestamp() - 10 * 86400)
    assert read_workload(out) == [] and out.read_text() == '{"jobs": [\n]}\n'


def test_days_must_be_positive():
    for days in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="is not a number of days"):
            history_query(days, 0)
    assert history_query(0.5, 86400) == {
        "all_users": "1",
        "state": "COMPLETED,FAILED,TIMEOUT,CANCELLED,NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY",
        "start": "43200",
        "end": "86400",
    }
