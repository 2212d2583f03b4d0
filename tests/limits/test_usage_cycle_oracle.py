"""The usage cycle writes only the records it changed (#18 simulator speed): an oracle.

Random sequences of the real services (submissions, passes, completions, suspensions,
sacctmgr changes of UsageFactor and NoDecay, usage set directly, reconfigures of the decay
half-life and the reset period) on a virtual clock that moves by nothing, seconds, hours
or past a reset boundary.  Before every usage cycle the cycle as it was before (every
record decayed and written, through the ORM) runs in a savepoint that is rolled back; then
the new cycle runs.  The usage records, the cycle's state, what it returns, sshare and
``scontrol show assoc_mgr`` must be the same.  A write skipped that should not have been
(a record compared wrongly, a new record not created) leaves them different.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from cluster import clock
from cluster.core.states import JobState
from cluster.models import Job
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_resume, job_submit, job_suspend
from cluster.services.scheduling import schedule_pass
from limits import reports, selectors
from limits.core.shapes import running_shape
from limits.core.usage import EMPTY, DecayPolicy, RunningCharge, UsageKey, assoc_key, qos_key, usage_cycle
from limits.models import LimitsState, Usage
from limits.services import record_add, record_modify, usage_cycle_run, usage_set

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]
START = datetime(2026, 3, 7, 21, 0, tzinfo=UTC)  # a few hours before a day and a week end


def old_cycle(now: datetime) -> str:
    """usage_cycle_run as it was before it wrote only what changed (kept as the oracle)."""
    stamp = now.timestamp()
    ctx = selectors.context()
    policy = ctx.policy
    with transaction.atomic():
        st, _ = LimitsState.objects.select_for_update().get_or_create(pk=1)
        last = st.last_cycle if st.last_cycle is not None else stamp
        last_reset = st.last_reset if st.last_reset is not None else stamp
        records = selectors._read_usage_records()
        charges = []
        rows = Job.objects.filter(state=JobState.RUNNING).values(
            "id", "user", "account", "partition", "qos", "alloc", "num_tasks", "cpus_per_task",
            "time_limit", "licenses", "licenses_alloc", "gres", "start_time",
        )  # fmt: skip
        for job in rows:
            plan = policy.plan(job["user"], job["account"], job["partition"], job["qos"])
            if plan.error is not None or not plan.usage_keys or job["start_time"] is None:
                continue
            shape = running_shape(policy, job)
            charges.append(
                RunningCharge(
                    keys=plan.usage_keys,
                    tres=shape.tres,
                    billing=float(shape.tres.get("billing", 0)),
                    start_time=job["start_time"].timestamp(),
                    usage_factor=plan.job_qos.usage_factor if plan.job_qos else 1.0,
                )
            )
        halves: dict[UsageKey, Mapping[str, float]] = {}
        for a in policy.assocs.values():
            if a.tres_decay_half_life:
                halves[a.key] = a.tres_decay_half_life
        for q in policy.qos.values():
            if q.tres_decay_half_life:
                halves[qos_key(q.name)] = q.tres_decay_half_life
        decay = DecayPolicy(
            half_life=ctx.priority.decay_half_life,
            tres_half_life=halves,
            no_decay=frozenset(qos_key(q.name) for q in policy.qos.values() if q.has("NoDecay")),
            reset_period=ctx.priority.usage_reset_period,
            tz=timezone.get_default_timezone(),
        )
        new, reset = usage_cycle(records, charges, last=last, now=stamp, policy=decay, last_reset=last_reset)
        existing = set(records)
        creates = []
        for key, rec in new.items():
            if rec is EMPTY and key not in existing:
                continue
            text = selectors.key_text(key)
            tres = {k: v for k, v in rec.tres_seconds.items() if v > 1e-9}
            if key in existing:
                Usage.objects.filter(key=text).update(
                    raw_usage=rec.raw_usage, tres_seconds=tres, wall_seconds=rec.wall_seconds
                )
            else:
                creates.append(
                    Usage(key=text, raw_usage=rec.raw_usage, tres_seconds=tres, wall_seconds=rec.wall_seconds)
                )
        if creates:
            Usage.objects.bulk_create(creates, ignore_conflicts=True)
        st.last_cycle = stamp
        st.last_reset = stamp if reset or st.last_reset is None else st.last_reset
        st.save(update_fields=["last_cycle", "last_reset"])
    return f"charged={len(charges)} records={len(new)}{' reset' if reset else ''}"


def register(now: datetime) -> None:
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 4000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
        now=now,
    )


def dump() -> tuple[Any, ...]:
    usage = list(
        Usage.objects.order_by("key").values_list("key", "raw_usage", "tres_seconds", "wall_seconds")
    )
    st = LimitsState.objects.filter(pk=1).values_list("last_cycle", "last_reset").first()
    return usage, st, reports.share_rows(), reports.assoc_mgr()


@pytest.fixture
def virtual_now():
    now = [START]
    clock.install(lambda: now[0])
    yield now
    clock.uninstall()


@pytest.fixture
def reconfigure(conf_dir, settings, demo):
    settings.CONF_DIR = conf_dir
    base = (conf_dir / "slurm.conf").read_text()

    def load(extra: str) -> None:
        (conf_dir / "slurm.conf").write_text(base + "\nAccountingStorageEnforce=limits\n" + extra + "\n")
        config_load(path=conf_dir / "slurm.conf", actor="admin")

    return load


def _steps(rng: random.Random, users, reconfigure, now: list[datetime]):
    admin = users["admin"]

    def running() -> list[int]:
        return list(Job.objects.filter(state__in=["RUNNING", "SUSPENDED"]).values_list("id", flat=True))

    def submit():
        user = rng.choice([users["alice"], users["bob"]])
        spec = {"wrap": "sleep 1000", "ntasks": rng.choice([1, 2, 4]), "time": rng.choice(["10", "60"])}
        if rng.random() < 0.3:
            spec["qos"] = "fast"
        job_submit(user=user, spec=spec, now=now[0])

    def finish():
        ids = running()
        if ids:
            job = Job.objects.get(pk=rng.choice(ids))
            agents.job_completed(
                completion={
                    "job_id": job.id,
                    "node": job.batch_host,
                    "exit_code": 0,
                    "signal": 0,
                    "end_time": now[0].timestamp(),
                }
            )

    def suspend():
        ids = running()
        if ids:
            job_id = rng.choice(ids)
            suspended = Job.objects.get(pk=job_id).state == "SUSPENDED"
            (job_resume if suspended else job_suspend)(actor=admin, job_id=job_id)

    def factor():
        value = rng.choice(["0", "1", "2.5"])
        record_modify(actor=admin, entity="qos", where=["name=fast"], options=[f"UsageFactor={value}"])

    def no_decay():
        flags = rng.choice(["NoDecay", "-1"])
        record_modify(actor=admin, entity="qos", where=["name=fast"], options=[f"Flags={flags}"])

    def set_usage():
        usage_set(actor=admin, key=assoc_key("physics"), tres_seconds={"cpu": rng.choice([0.0, 600.0])})

    def decay():
        reconfigure(
            rng.choice(["PriorityDecayHalfLife=0", "PriorityDecayHalfLife=60", "PriorityDecayHalfLife=7-0"])
            + "\n"
            + rng.choice(["PriorityUsageResetPeriod=NONE", "PriorityUsageResetPeriod=DAILY"])
        )

    def tick():
        now[0] += timedelta(seconds=rng.choice([0, 0, 1, 45, 300, 3600, 5 * 3600]))

    return [
        (submit, 4),
        (lambda: schedule_pass(now=now[0]), 4),
        (finish, 2),
        (suspend, 1),
        (factor, 1),
        (no_decay, 1),
        (set_usage, 1),
        (decay, 1),
        (tick, 6),
    ]


def science_tree(admin, *, fast_priority: int | None = None) -> None:
    """QOS ``fast``; accounts science > physics; alice in physics, bob in science, both
    with QOS normal and fast."""
    priority = [f"Priority={fast_priority}"] if fast_priority else []
    record_add(actor=admin, entity="qos", names=["fast"], options=priority)
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="account", names=["physics"], options=["Parent=science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=physics", "QOS=normal,fast"])
    record_add(actor=admin, entity="user", names=["bob"], options=["Account=science", "QOS=normal,fast"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_cycle_writes_what_the_old_cycle_wrote(reconfigure, users, virtual_now, seed):
    reconfigure("PriorityDecayHalfLife=60")
    science_tree(users["admin"])
    register(virtual_now[0])
    rng = random.Random(seed)
    funcs, weights = zip(*_steps(rng, users, reconfigure, virtual_now), strict=True)
    quiet = charged = 0
    for _ in range(70):
        step = rng.choices(funcs, weights)[0]
        with contextlib.suppress(ServiceError):  # a refusal (a job already ended): still compared
            step()
        with transaction.atomic():
            want_result = old_cycle(virtual_now[0])
            want = dump()
            transaction.set_rollback(True)
        written = Usage.objects.count(), list(Usage.objects.values_list("raw_usage", flat=True))
        got_result = usage_cycle_run(now=virtual_now[0])
        assert got_result == want_result
        assert dump() == want
        if (Usage.objects.count(), list(Usage.objects.values_list("raw_usage", flat=True))) == written:
            quiet += 1
        charged += Usage.objects.filter(raw_usage__gt=0).exists()
    assert charged  # the sequence did charge usage
    assert quiet  # and some cycles had nothing to change
