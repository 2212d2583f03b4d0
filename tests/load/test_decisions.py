"""The load check's decisions for a node (load.core.decisions): drain and undrain, the
stop and continue orders, and the safeguards against thrashing."""

from __future__ import annotations

from load.core.decisions import NodeJob, check_node, continue_order, stop_order
from load.core.thresholds import parse

NOW = 10_000.0
EXAMPLE = parse({"LoadSchedMem": "1300", "LoadStopMem": "1200", "LoadSchedUt": "80", "LoadStopUt": "90"})
CALM = {"mem": 5000, "ut": 10.0, "r15s": 0.1, "r1m": 0.1, "r15m": 0.1}


def job(job_id: int, priority: int, started_ago: float, stopped: bool = False) -> NodeJob:
    return NodeJob(job_id=job_id, priority=priority, start=NOW - started_ago, stopped=stopped)


def check(indices, jobs=(), *, thresholds=EXAMPLE, drained=False, admin=False, run_queue=None):
    decisions = check_node(
        thresholds=thresholds,
        indices={**CALM, **indices},
        run_queue=run_queue,
        jobs=list(jobs),
        load_drained=drained,
        admin_drained=admin,
        now=NOW,
    )
    return [(d.action, d.job_id, d.reason) for d in decisions]


def test_stop_order_lowest_priority_then_latest_started() -> None:
    jobs = [job(1, 100, 500), job(2, 50, 400), job(3, 50, 300), job(4, 200, 900), job(5, 50, 300)]
    assert [j.job_id for j in stop_order(jobs)] == [5, 3, 2, 1, 4]


def test_continue_order_highest_priority_then_earliest_started() -> None:
    jobs = [job(1, 100, 500, True), job(2, 50, 400, True), job(3, 50, 300, True), job(4, 200, 900, True)]
    jobs.append(job(6, 300, 100))  # running: not continued
    assert [j.job_id for j in continue_order(jobs)] == [4, 1, 2, 3]


def test_crossing_a_sched_threshold_drains_with_the_figures() -> None:
    assert check({"mem": 1250}) == [("drain", None, "Load: mem=1250<LoadSchedMem=1300")]
    assert check({"ut": 85.25}) == [("drain", None, "Load: ut=85.25>LoadSchedUt=80")]
    assert check({"mem": 1250}, drained=True) == []  # drained already
    assert check({"mem": 1250}, admin=True) == []  # an administrator's drain is not taken over


def test_undrain_only_when_every_sched_threshold_is_met_with_room() -> None:
    assert check({}, drained=True) == [("undrain", None, "Load: thresholds met")]
    assert check({"mem": 1300}, drained=True) == []  # on the threshold: neither way
    assert check({"ut": 80}, drained=True) == []
    assert check({}, drained=False) == []  # not drained by load: nothing to undo


def test_a_stop_threshold_stops_the_lowest_priority_job_one_per_check() -> None:
    jobs = [job(1, 100, 500), job(2, 50, 400), job(3, 50, 300)]
    got = check({"mem": 1100}, jobs)
    assert got == [
        ("drain", None, "Load: mem=1100<LoadSchedMem=1300"),
        ("stop", 3, "Load: mem=1100<LoadStopMem=1200"),
    ]
    jobs[2] = job(3, 50, 300, stopped=True)
    assert check({"mem": 1100}, jobs, drained=True) == [("stop", 2, "Load: mem=1100<LoadStopMem=1200")]


def test_the_last_running_job_is_never_stopped() -> None:
    jobs = [job(1, 100, 500), job(2, 50, 400, stopped=True)]
    assert check({"mem": 1100}, jobs, drained=True) == []


def test_a_job_that_has_not_run_through_a_check_is_waited_for() -> None:
    jobs = [job(1, 100, 500), job(2, 50, 10)]  # the lowest-priority one started 10 s ago
    assert check({"ut": 95}, jobs, drained=True) == []


def test_no_stop_for_the_run_queue_once_the_instant_queue_is_back_under() -> None:
    t = parse({"LoadSchedR1m": "2", "LoadStopR1m": "3"})
    jobs = [job(1, 100, 500), job(2, 50, 400)]
    assert check({"r1m": 3.4}, jobs, thresholds=t, drained=True, run_queue=5)[0][:2] == ("stop", 2)
    assert check({"r1m": 3.4}, jobs, thresholds=t, drained=True, run_queue=2) == []


def test_recovery_continues_one_job_per_check_then_undrains() -> None:
    jobs = [job(1, 100, 500), job(2, 50, 400, stopped=True), job(3, 80, 300, stopped=True)]
    assert check({}, jobs, drained=True) == [("continue", 3, "Load: thresholds met")]
    jobs[2] = job(3, 80, 300)
    assert check({}, jobs, drained=True) == [("continue", 2, "Load: thresholds met")]
    jobs[1] = job(2, 50, 400)
    assert check({}, jobs, drained=True) == [("undrain", None, "Load: thresholds met")]


def test_without_stop_thresholds_jobs_are_never_stopped() -> None:
    only_sched = parse({"LoadSchedMem": "1300"})
    jobs = [job(1, 100, 500), job(2, 50, 400)]
    assert check({"mem": 100}, jobs, thresholds=only_sched) == [
        ("drain", None, "Load: mem=100<LoadSchedMem=1300")
    ]
