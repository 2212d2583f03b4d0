"""cluster.core.job_top: scontrol top's new priorities and nice values, as slurmctld's
_set_top computes them (src/slurmctld/job_mgr.c)."""

from __future__ import annotations

from cluster.core.job_top import Ranked, top_order


def test_the_moved_job_takes_the_highest_priority_and_the_others_give_it_back():
    order = top_order([Ranked(1, 100, 0)], [Ranked(2, 300, 0), Ranked(3, 200, 0)])
    # Its nice falls by what it gained; the others' nice rises by what they lost.
    assert order == {1: (300, -200), 2: (200, 100), 3: (100, 100)}
    assert sum(p for p, _ in order.values()) == 600


def test_moved_jobs_keep_the_order_given():
    order = top_order([Ranked(3, 10, 0), Ranked(1, 30, 0)], [Ranked(2, 20, 0)])
    assert order == {3: (30, -20), 1: (20, 10), 2: (10, 10)}


def test_an_equal_priority_is_one_below_the_previous_and_the_others_end_below_the_last():
    order = top_order([Ranked(1, 100, 5), Ranked(4, 100, 0)], [Ranked(2, 300, 0)])
    assert order[1] == (300, -195)
    assert order[4] == (100, 0)
    # 300 less the 200 given back would tie the last moved job: one below it instead.
    assert order[2] == (99, 201)


def test_a_job_already_first_changes_nothing():
    assert top_order([Ranked(1, 500, 0)], [Ranked(2, 100, 0)]) == {1: (500, 0), 2: (100, 0)}


def test_no_other_jobs():
    assert top_order([Ranked(1, 5, 0), Ranked(2, 9, 0)], []) == {1: (9, -4), 2: (5, 4)}
