"""The submit limits (MaxSubmitJobs, GrpSubmitJobs, a QOS's MaxSubmitJobsPerUser and
MaxSubmitJobsPerAccount) read the counts the database keeps by (user, account, partition,
QOS) (limits/submit_counts.py), not every active job (#18: a submission's cost grew with
the queue's depth): on random trees, limits and queues (fixed seeds) every submission gets
the verdict the old computation, from every active job's request, gave; and a submission
reads no job's row, only the kept counts, whatever the queue's depth."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from cluster.core.states import ACTIVE_JOB_STATES, JobState
from cluster.models import ClusterConfig, Job
from cluster.services.errors import ServiceError
from limits import selectors
from limits.core.policy import JobRequest, Policy, check_submit
from limits.core.shapes import requested_shape
from limits.services import _slurm_words, record_add, submit_fields

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 1, 1, tzinfo=UTC)
USERS = ("alice", "bob", "carol", "dave")
ACCOUNTS = ("science", "physics", "chemistry", "arts")
QOS_NAMES = ("normal", "q1", "q2")
PARTITIONS = ("debug", "batch", "long")
STATES = (JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETED, JobState.CANCELLED)


def active_requests(policy: Policy, account: str, qos: str, user: str) -> list[JobRequest]:
    """The old computation: every active job the submit limits can count, read whole."""
    tree = policy.top_tree(account)
    rows = Job.objects.filter(
        Q(user=user) | Q(account__in=tree) | Q(qos=qos), state__in=[s.value for s in ACTIVE_JOB_STATES]
    ).values(
        "id", "user", "account", "partition", "qos", "state", "min_nodes", "num_tasks", "cpus_per_task",
        "mem_per_node", "time_limit", "licenses", "gres", "submit_time",
    )  # fmt: skip
    return [
        JobRequest(
            job_id=r["id"],
            user=r["user"],
            account=r["account"],
            partition=r["partition"],
            qos=r["qos"],
            shape=requested_shape(policy, r["partition"], r),
            submit_time=r["submit_time"].timestamp(),
            running=r["state"] != JobState.PENDING,
        )
        for r in rows
    ]


def old_verdict(common: dict, count: int) -> str | None:
    """submit_fields' refusal as the old computation gave it (None: accepted)."""
    policy = selectors.context(ClusterConfig.current()).policy
    account = common.get("account") or policy.users[common["user"]].default_account
    assoc = policy.association(common["user"], account, common["partition"])
    qos = policy.job_qos_name(assoc, common.get("qos") or "")
    job = JobRequest(
        job_id=0, user=common["user"], account=account, partition=common["partition"], qos=qos,
        shape=requested_shape(policy, common["partition"], common), submit_time=NOW.timestamp(),
    )  # fmt: skip
    active = active_requests(policy, account, qos, common["user"])
    verdict = check_submit(policy, job, active=active, now=NOW.timestamp(), count=count)
    return None if verdict is None else _slurm_words(verdict)


def new_verdict(common: dict, count: int) -> str | None:
    try:
        submit_fields(common, count=count, now=NOW)
    except ServiceError as exc:
        return str(exc)
    return None


def limit(rng: random.Random, *names: str) -> list[str]:
    return [f"{name}={rng.randrange(1, 12)}" for name in names if rng.random() < 0.5]


def make_tree(rng: random.Random, admin) -> dict[str, list[str]]:
    cfg = ClusterConfig.current()
    cfg.options = {**cfg.options, "AccountingStorageEnforce": "limits,qos"}
    cfg.version += 1
    cfg.save()
    for q in QOS_NAMES[1:]:
        opts = limit(rng, "GrpSubmitJobs", "MaxSubmitJobsPerUser", "MaxSubmitJobsPerAccount")
        record_add(actor=admin, entity="qos", names=[q], options=opts)
    record_add(actor=admin, entity="account", names=["science"], options=limit(rng, "GrpSubmitJobs"))
    for name in ACCOUNTS[1:]:
        parent = "science" if name != "arts" else "root"
        opts = [f"Parent={parent}", *limit(rng, "GrpSubmitJobs", "MaxSubmitJobs")]
        record_add(actor=admin, entity="account", names=[name], options=opts)
    member = {user: rng.sample(ACCOUNTS, 2) for user in USERS}
    for user, accounts in member.items():
        for account in accounts:
            opts = [f"Account={account}", "QOS=normal,q1,q2", *limit(rng, "MaxSubmitJobs")]
            record_add(actor=admin, entity="user", names=[user], options=opts)
    return member


def make_queue(rng: random.Random, depth: int) -> None:
    Job.objects.bulk_create(
        Job(
            id=i, user=rng.choice(USERS), account=rng.choice(ACCOUNTS), partition=rng.choice(PARTITIONS),
            qos=rng.choice(QOS_NAMES), state=rng.choice(STATES), submit_time=NOW,
            num_tasks=rng.randrange(1, 5), time_limit=rng.choice((None, 10, 30)),
        )
        for i in range(1, depth + 1)
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(5))
def test_every_submission_gets_the_verdict_the_old_count_gave(demo, users, seed):
    rng = random.Random(seed)
    member = make_tree(rng, users["admin"])
    make_queue(rng, rng.randrange(20, 90))
    verdicts = []
    for _ in range(40):
        user = rng.choice(USERS)
        accounts = member[user]
        common = {
            "user": user, "partition": rng.choice(PARTITIONS), "num_tasks": 1, "min_nodes": 1,
            "time_limit": 10, "account": rng.choice([*accounts, ""]), "qos": rng.choice([*QOS_NAMES, ""]),
        }  # fmt: skip
        count = rng.choice((1, 1, 1, 4))
        verdicts.append(old_verdict(common, count))
        assert new_verdict(common, count) == verdicts[-1], common
    assert None in verdicts and any(v and "job submit limit" in v for v in verdicts)


def test_a_submission_reads_counts_not_jobs_and_nothing_without_a_submit_limit(demo, users):
    admin = users["admin"]
    make_tree(random.Random(3), admin)
    record_add(actor=admin, entity="account", names=["free"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=free"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=arts", "MaxSubmitJobs=500"])
    make_queue(random.Random(3), 400)
    common = {"user": "alice", "partition": "debug", "num_tasks": 1, "min_nodes": 1, "time_limit": 10}

    def reads(account: str) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            submit_fields({**common, "account": account}, now=NOW)
        return [q["sql"] for q in queries if "cluster_job" in q["sql"] or "limits_submitted" in q["sql"]]

    read = reads("arts")
    # The database's kept counts (limits/submit_counts.py): the job table is not read.
    assert read and not any("cluster_job" in sql for sql in read)
    assert any("SUM(n)" in sql and sql.endswith("HAVING SUM(n) <> 0") for sql in read)
    assert reads("free") == []  # no submit limit applies: no count is read
