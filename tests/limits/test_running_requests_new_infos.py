"""The running jobs' requests kept whole across a new infos mapping whose running jobs'
entries are the same objects (``ShapeMemo.same_running``, #18: the limits' per-job fields
are a new mapping after every submission, ``limits.services._job_infos``, and every pass
then made every running job's request again).

A count: a pass after a pending job's info came reuses the running requests whole (no
walk of the running jobs); a pass after a running job's info was replaced (even by an equal
object) does not reuse them whole, and decides as a plugin without the memo.  The oracle on
random passes is tests/limits/test_running_requests_memo.py.
"""

from __future__ import annotations

import dataclasses
import random

from cluster.core.states import JobState
from limits.core.plugin import JobLimitsInfo, LimitsPlugin, ShapeMemo
from tests.limits.test_running_requests_memo import _counts, _plain
from tests.limits.test_shape_memo import POLICIES, _jobs, _snapshot


def test_a_new_mapping_with_the_running_entries_the_same_reuses_the_requests(monkeypatch):
    rng = random.Random(4)
    jobs = _jobs(rng)
    while not any(j.node_indices and j.state == JobState.RUNNING for j in jobs):
        jobs = _jobs(rng)
    snap = _snapshot(rng, jobs, None)
    infos = {j.job_id: JobLimitsInfo(account="phys", qos="normal") for j in jobs}
    memo = ShapeMemo()
    first = LimitsPlugin(POLICIES[0], jobs=infos, memo=memo)
    first.begin_pass(snap)
    whole = memo._whole
    assert whole is not None
    walks = []  # the running jobs walked one by one (their requests not kept whole)
    walk = memo.running_requests
    monkeypatch.setattr(memo, "running_requests", lambda shapes: walks.append(1) or walk(shapes))

    # A submission: a new mapping, one entry more, the others the same objects.
    added = {**infos, 999: JobLimitsInfo(account="phys", qos="normal")}
    second = LimitsPlugin(POLICIES[0], jobs=added, memo=memo)
    second.begin_pass(snap)
    assert walks == []
    assert second.state.running == whole[5]

    # A running job's info replaced by an equal object: made again, as without the memo.
    running = next(j for j in snap.running if j.state == JobState.RUNNING)
    replaced = {**added, running.job_id: dataclasses.replace(added[running.job_id])}
    third = LimitsPlugin(POLICIES[0], jobs=replaced, memo=memo)
    third.begin_pass(snap)
    assert walks == [1]
    fresh = LimitsPlugin(POLICIES[0], jobs=replaced)
    fresh.begin_pass(snap)
    assert [_plain(r) for r in third.state.running] == [_plain(r) for r in fresh.state.running]
    assert _counts(third) == _counts(fresh)
