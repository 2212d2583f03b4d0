"""More of a pass's reads kept between passes (#18 simulator speed) against a fresh
computation: an oracle.

The limits' per-job fields (``limits.services._job_infos``: a kept value of the job and
accounting tables), the fair-share factors (``_fair_tree``: computed again only for
another policy or usage records object), the jobs' priority fields (``_priority_info``:
made again only for other infos or nice values) and the pending jobs' GRES requests
(``cluster.services.gres.pending_requests``: a kept value of the job table).  Random
sequences of the real services (submissions, some asking for GPUs, passes, completions,
suspensions, holds and releases, sacctmgr changes, usage set directly and by the usage
cycle, reconfigures) inside ``keep()``; after every step each must equal what a fresh
read computes, and the pass's decisions must equal those made after everything kept is
forgotten.  Without one of the kept values' tables, with the factors kept for the policy
alone or the priority fields for the infos alone, some step leaves them different.
"""

from __future__ import annotations

import contextlib
import random

import pytest

from cluster.models import Job
from cluster.services import gres, pass_snapshot
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_hold, job_release, job_submit
from cluster.services.scheduling import decide
from limits import selectors
from limits import services as limits_services
from limits.core.priority import JobPriorityInfo, fair_tree
from limits.models import JobAccounting, Usage
from limits.services import usage_cycle_run
from tests.limits.test_usage_cycle_oracle import _steps, reconfigure, register, science_tree, virtual_now  # noqa: F401

pytestmark = pytest.mark.django_db


def _assert_same(now, seen, rng):
    infos = limits_services._job_infos()
    assert infos == dict(limits_services._read_job_infos())
    ctx = selectors.context()
    usage = selectors.usage_records()
    assert limits_services._fair_tree(ctx.policy, usage) == fair_tree(ctx.policy, usage)
    for _ in range(2):  # the pending jobs' nice values as a pass may find them
        nice = {job_id: rng.choice([0, 0, 5, -3]) for job_id in infos if rng.random() < 0.5}
        assert limits_services._priority_info(infos, nice) == {
            job_id: JobPriorityInfo(
                account=i.account, qos=i.qos, accrue_time=i.accrue_time, nice=nice.get(job_id, 0)
            )
            for job_id, i in infos.items()
        }
    requests = gres.pending_requests()
    assert requests == gres._read_pending_requests()
    seen["gres"] += bool(requests)
    seen["infos"] += bool(infos)
    result = decide(now)[3]
    pass_snapshot.forget()
    assert result == decide(now)[3]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_pass_reads_equal_a_fresh_read(reconfigure, users, virtual_now, seed):  # noqa: F811
    reconfigure("PriorityDecayHalfLife=60\nPriorityWeightFairshare=1000\nPriorityWeightAge=100")
    admin = users["admin"]
    science_tree(admin, fast_priority=10)
    register(virtual_now[0])
    rng = random.Random(seed)

    def pending() -> list[int]:
        return list(Job.objects.filter(state="PENDING").values_list("id", flat=True))

    def gpu_job():
        field = rng.choice(["gres", "gpus", "gpus_per_task"])
        spec = {"wrap": "sleep 100", "ntasks": rng.choice([1, 2]), field: rng.choice(["gpu:1", "1", "2"])}
        if field == "gres":
            spec["gres"] = rng.choice(["gpu:1", "gpu:tesla:2"])
        job_submit(user=rng.choice([users["alice"], users["bob"]]), spec=spec, now=virtual_now[0])

    def hold_or_release():
        ids = pending()
        if ids:
            job_id = rng.choice(ids)
            held = Job.objects.get(pk=job_id).hold
            (job_release if held else job_hold)(actor=admin, job_id=job_id)

    def accrue():
        # An accounting row written by no pass: the per-job fields follow the table.
        ids = pending()
        if ids:
            JobAccounting.objects.update_or_create(
                job_id=rng.choice(ids), defaults={"accrue_time": virtual_now[0].timestamp()}
            )

    steps = _steps(rng, users, reconfigure, virtual_now)
    steps += [
        (gpu_job, 3),
        (hold_or_release, 2),
        (accrue, 1),
        (lambda: usage_cycle_run(now=virtual_now[0]), 3),
        (lambda: Usage.objects.filter(key="assoc|physics||").update(raw_usage=rng.random() * 1e5), 1),
    ]
    funcs, weights = zip(*steps, strict=True)
    seen = {"gres": 0, "infos": 0}
    with pass_snapshot.keep():
        for _ in range(60):
            step = rng.choices(funcs, weights)[0]
            with contextlib.suppress(ServiceError):  # a refusal: still compared
                step()
            _assert_same(virtual_now[0], seen, rng)
    assert seen["gres"] and seen["infos"]  # the sequence did ask for GRES and hold jobs
