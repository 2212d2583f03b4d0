"""The limits' writes after a pass (``limits.services.apply_pass``: the UsageFactor booked
by each started job, the accrue time of the jobs that begin accruing) in one statement
each, against the ORM's ``update_or_create`` per job that wrote them before (kept here as
the oracle): on random queues, with accounting rows missing, empty or holding other values,
started jobs running or not, the accounting table must end the same."""

from __future__ import annotations

import random
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import transaction

from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.jobs import job_submit
from limits import services as limits_services
from limits.models import JobAccounting
from limits.services import record_modify
from tests.limits.test_usage_cycle_oracle import reconfigure, register, science_tree, virtual_now  # noqa: F401

pytestmark = pytest.mark.django_db


def old_apply(result, active, now) -> None:
    """apply_pass's accounting writes as they were (the ORM, one job at a time)."""
    plugin = next(p for p in active if isinstance(p, limits_services.LimitsPlugin))
    started = [s.job_id for s in result.starts]
    if started:
        factors = {}
        for job_id, user, part, acct, qos in Job.objects.filter(
            pk__in=started, state=JobState.RUNNING
        ).values_list("id", "user", "partition", "account", "qos"):
            plan = plugin.policy.plan(user, acct, part, qos)
            factors[job_id] = plan.usage_factor if plan.error is None else 1.0
        for job_id, factor in factors.items():
            JobAccounting.objects.update_or_create(job_id=job_id, defaults={"usage_factor": factor})
    stamp = now.timestamp()
    for job_id in result.accrue_start:
        JobAccounting.objects.update_or_create(job_id=job_id, defaults={"accrue_time": stamp})


def _rows() -> list[tuple]:
    return list(JobAccounting.objects.order_by("job_id").values_list("job_id", "accrue_time", "usage_factor"))


def _queue(rng: random.Random, users, now) -> list[int]:
    for _ in range(rng.randint(1, 12)):
        spec = {"wrap": "true", "ntasks": rng.choice([1, 2])}
        if rng.random() < 0.5:
            spec["qos"] = "fast"
        job_submit(user=rng.choice([users["alice"], users["bob"]]), spec=spec, now=now)
    ids = list(Job.objects.values_list("id", flat=True))
    for job_id in ids:
        roll = rng.random()
        if roll < 0.3:
            JobAccounting.objects.filter(job_id=job_id).delete()
        elif roll < 0.6:
            JobAccounting.objects.filter(job_id=job_id).update(
                accrue_time=rng.choice([None, 5.0]), usage_factor=rng.choice([None, 0.5, 3.0])
            )
        if rng.random() < 0.5:
            Job.objects.filter(pk=job_id).update(state=rng.choice([JobState.RUNNING, JobState.COMPLETED]))
    return ids


@pytest.mark.parametrize("seed", range(6))
def test_the_accounting_rows_end_as_update_or_create_left_them(reconfigure, users, virtual_now, seed):  # noqa: F811
    rng = random.Random(seed)
    reconfigure("")
    science_tree(users["admin"])
    factor = rng.choice(["0.5", "2", "3.25"])
    record_modify(actor=users["admin"], entity="qos", where=["name=fast"], options=[f"UsageFactor={factor}"])
    register(virtual_now[0])
    compared = 0
    for round_ in range(4):
        now = virtual_now[0] + timedelta(seconds=37 * round_)
        ids = _queue(rng, users, now)
        chosen = rng.sample(ids, rng.randint(0, len(ids)))
        result = SimpleNamespace(
            starts=tuple(SimpleNamespace(job_id=i) for i in chosen[: len(chosen) // 2]),
            accrue_start=frozenset(chosen[len(chosen) // 2 :]),
            kills=(),
        )
        active = limits_services.pass_plugins()
        with transaction.atomic():
            old_apply(result, active, now)
            want = _rows()
            transaction.set_rollback(True)
        limits_services.apply_pass(result, active, now)
        assert _rows() == want
        compared += bool(chosen)
    assert compared
