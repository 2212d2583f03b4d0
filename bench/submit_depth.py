"""Benchmark: a submission's limits check against the queue's depth (#18).

    .venv/bin/python -m bench.submit_depth [--depth 1000 10000 100000] [--runs 50]

Slurm keeps every association's and QOS's count of submitted jobs in memory, so sbatch's
MaxSubmitJobs check costs the same whatever the queue.  This times
``limits.services.submit_fields`` (the account, QOS and submit limits of a new job) on a
database holding ``depth`` active jobs of 20 users in 4 accounts and 3 QOS, with
``AccountingStorageEnforce=limits,qos``, a MaxSubmitJobs on the submitting user's
association, a GrpSubmitJobs on its account and a MaxSubmitJobsPerUser on its QOS (all set
high: every submission passes), and prints the median per depth.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import store

NOW = datetime(2026, 1, 1, tzinfo=UTC)
USERS = [f"u{i}" for i in range(20)]
ACCOUNTS = ("a0", "a1", "a2", "a3")
QOS = ("normal", "q1", "q2")


def _policy(conf: Path) -> None:
    from django.contrib.auth.models import User

    from cluster.models import ClusterConfig
    from cluster.services.configuration import config_load
    from limits.services import record_add

    conf.mkdir(parents=True, exist_ok=True)
    (conf / "slurm.conf").write_text(
        "ClusterName=bench\nSlurmctldHost=localhost\nAccountingStorageEnforce=limits,qos\n"
        "NodeName=n[1-4] CPUs=8 RealMemory=8000 State=UNKNOWN\n"
        "PartitionName=batch Nodes=n[1-4] Default=YES MaxTime=60\n"
    )
    config_load(path=conf / "slurm.conf")
    cfg = ClusterConfig.current()
    assert "limits" in (cfg.options or {}).get("AccountingStorageEnforce", "")
    admin = User.objects.create_superuser("benchadmin", password="x")  # noqa: S106 - a throwaway database
    for q in QOS[1:]:
        record_add(actor=admin, entity="qos", names=[q], options=["MaxSubmitJobsPerUser=10000000"])
    for account in ACCOUNTS:
        record_add(actor=admin, entity="account", names=[account], options=["GrpSubmitJobs=10000000"])
    for k, user in enumerate(USERS):
        opts = [f"Account={ACCOUNTS[k % 4]}", "QOS=normal,q1,q2", "MaxSubmitJobs=10000000"]
        record_add(actor=admin, entity="user", names=[user], options=opts)


def _fill(depth: int, start: int) -> int:
    from cluster.core.states import JobState
    from cluster.models import Job

    jobs = [
        Job(
            id=start + i,
            user=USERS[i % 20],
            account=ACCOUNTS[(i % 20) % 4],
            partition="batch",
            qos=QOS[i % 3],
            state=JobState.PENDING if i % 4 else JobState.RUNNING,
            submit_time=NOW,
            num_tasks=1,
            time_limit=10,
        )
        for i in range(depth)
    ]
    Job.objects.bulk_create(jobs, batch_size=5000)
    return start + depth


def _time(runs: int) -> float:
    from limits.services import submit_fields

    common = {"user": "u1", "account": "a1", "qos": "q1", "partition": "batch", "num_tasks": 1,
              "min_nodes": 1, "time_limit": 10}  # fmt: skip
    submit_fields(common, now=NOW)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        submit_fields(common, now=NOW)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    ap.add_argument("--runs", type=int, default=50)
    ns = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fsched-submit-") as tmp:
        store.migrated(tmp)
        _policy(Path(tmp) / "conf")
        print("active jobs | submit check, median ms")
        have, next_id = 0, 1
        for depth in sorted(ns.depth):
            next_id = _fill(depth - have, next_id)
            have = depth
            print(f"{depth:>11,} | {_time(ns.runs) * 1000:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
