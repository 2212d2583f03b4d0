"""The rollup's pure core (reports.core.rollup): where each second of an hour goes, as
sreport's man page defines Allocated, Down, PLND Down, Planned, Idle and Over Comm."""

from __future__ import annotations

from reports.core.rollup import HOUR, JobSpan, NodeInfo, ResvSpan, node_category, node_segments, roll_hour

NODES = [NodeInfo("a", 4, 100), NodeInfo("b", 4, 100)]


def job(
    jid: int, cpus: int, start: float | None, end: float | None, *, eligible: float = 0.0, **kw
) -> JobSpan:
    return JobSpan(
        id=jid, account="acct", user="u", cpus=cpus, mem=10, nodes=1, billing=cpus, gpus=0,
        eligible=eligible, start=start, end=end, **kw,
    )  # fmt: skip


def up(hours: float = 1.0) -> dict:
    return {n.name: [(0.0, hours * HOUR, "up")] for n in NODES}


def test_node_states_as_parts_of_the_utilisation():
    assert node_category("IDLE+CLOUD+POWERED_DOWN") == "pdown"
    assert node_category("FUTURE") == "pdown"
    assert node_category("DOWN+DRAIN") == "down"
    assert node_category("IDLE+DRAIN") == "down"  # fully drained
    assert node_category("MIXED+DRAIN") == "up"  # draining: its jobs still run
    assert node_category("ALLOCATED") == "up"


def test_segments_follow_the_changes_in_the_window():
    segs = node_segments(
        {"a": "IDLE"}, [(600.0, "a", "DOWN"), (900.0, "a", "IDLE"), (5000.0, "a", "DOWN")], 0, 3600
    )
    assert segs == {"a": [(0, 600.0, "up"), (600.0, 900.0, "down"), (900.0, 3600, "up")]}


def test_two_jobs_sharing_a_node_allocate_it_once():
    jobs = [job(1, 2, 0.0, None, hosts=("a",)), job(2, 2, 1800.0, None, hosts=("a",))]
    hour = roll_hour(0.0, NODES, up(), jobs)
    assert hour.cluster["cpu"].alloc == 2 * HOUR + 2 * HOUR / 2
    assert hour.cluster["node"].alloc == HOUR
    assert (hour.cluster["node"].plan, hour.cluster["node"].idle) == (HOUR / 2, HOUR / 2)
    # Job 2 waited half the hour for 2 CPUs: planned.
    assert hour.cluster["cpu"].plan == 2 * HOUR / 2


def test_reservations_maint_and_ignore_jobs():
    resv = ResvSpan("r", 0.0, HOUR, cpus=4, mem=100, nodes=1)
    maint = ResvSpan("m", 0.0, HOUR / 2, cpus=4, mem=100, nodes=1, maint=True)
    jobs = [job(1, 1, 0.0, HOUR, reservation="r", hosts=("a",))]
    hour = roll_hour(0.0, NODES, up(), jobs, [resv, maint])
    cpu = hour.cluster["cpu"]
    # The reservation's unused 3 CPUs count as allocated (and reserved); MAINT is planned down.
    assert (cpu.alloc, cpu.resv, cpu.pdown) == (4 * HOUR, 3 * HOUR, 4 * HOUR / 2)
    assert cpu.idle == 8 * HOUR - 4 * HOUR - 2 * HOUR


def test_what_waiting_jobs_ask_beyond_the_free_time_is_overcommitted():
    jobs = [job(1, 8, 0.0, None, hosts=("a", "b")), job(2, 8, None, None), job(3, 4, None, None)]
    cpu = roll_hour(0.0, NODES, up(), jobs).cluster["cpu"]
    assert (cpu.alloc, cpu.plan, cpu.over, cpu.idle) == (8 * HOUR, 0.0, 12 * HOUR, 0.0)


def test_job_counts_waits_and_run_times():
    jobs = [job(1, 2, 600.0, 1200.0, eligible=0.0), job(2, 2, 3000.0, None, eligible=2000.0)]
    s = roll_hour(0.0, NODES, up(), jobs).jobs[("acct", "u", 2)]
    assert (s.started, s.ended, s.wait_secs, s.run_secs) == (2, 1, 600.0 + 1000.0, 600.0)
    assert s.wait_hist == [0, 0, 2, 0, 0, 0] and s.run_hist == [0, 0, 1, 0, 0, 0]
