"""Benchmark: one scheduler pass with the limits plugin on a large accounting tree.

    .venv/bin/python bench/limits_pass.py [--jobs 20000] [--nodes 2048] [--runs 5] [--seed 1]

The cluster and queue of ``bench/scheduler_pass.py`` (20,000 pending jobs, 2,048 nodes,
about 70 % busy), spread over 2,000 users in 200 accounts four levels deep (root, 4
divisions, 20 departments, 176 groups), 20 QOS (one a partition QOS), every association and
QOS limit kind set somewhere, usage records on every association and QOS, and
``AccountingStorageEnforce=limits,qos,safe``.  Prints the median pass time with and without
the plugin, and the reasons the limits gave.  ``--random-qos`` gives every job any QOS (the
worst case: about 27,000 distinct (user, account, partition, QOS) keys to resolve);
``--no-gc`` shows what CPython's cyclic collector costs on a heap this size.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scheduler_pass import build
from cluster.core.scheduler import Snapshot, schedule
from limits.core.plugin import JobLimitsInfo, LimitsPlugin
from limits.core.policy import (
    QOS,
    Association,
    AssocLimits,
    Enforce,
    PartitionLimits,
    Policy,
    QOSLimits,
    User,
)
from limits.core.usage import UsageRecord, assoc_key, qos_key

BIG = 10**9


def accounting(rng: random.Random, users: int) -> tuple[Policy, list[tuple[str, str]]]:
    assocs = [
        Association(
            "root",
            limits=AssocLimits(
                grp_tres={"cpu": 200_000}, grp_submit_jobs=100_000, max_wall_duration_per_job=10080
            ),
        )
    ]
    groups: list[str] = []
    for d in range(4):
        div = f"div{d}"
        assocs.append(
            Association(
                div,
                parent="root",
                fairshare=rng.choice((10, 20, 40)),
                limits=AssocLimits(
                    grp_jobs=4000,
                    grp_jobs_accrue=3000,
                    grp_tres={"cpu": 60_000, "mem": 400_000_000},
                    grp_tres_mins={"cpu": BIG},
                    grp_tres_run_mins={"cpu": BIG},
                    grp_wall=BIG,
                ),
                tres_decay_half_life={"cpu": 86400},
            )
        )
        for e in range(5):
            dept = f"dept{d}{e}"
            assocs.append(
                Association(
                    dept,
                    parent=div,
                    limits=AssocLimits(
                        max_tres_per_job={"cpu": 4096},
                        max_tres_per_node={"cpu": 128},
                        max_tres_mins_per_job={"cpu": 50_000_000},
                        max_jobs_accrue=60,
                        min_prio_threshold=0,
                        grp_tres={"node": 1500},
                    ),
                )
            )
            for g in range(9 if d * 5 + e < 16 else 8):
                name = f"grp{d}{e}{g}"
                groups.append(name)
                assocs.append(
                    Association(
                        name,
                        parent=dept,
                        fairshare=rng.randint(1, 100),
                        limits=AssocLimits(grp_jobs=rng.choice((40, 80, 160)), max_submit_jobs=1000),
                    )
                )
    assert len(assocs) == 201, len(assocs)  # root + 200 accounts
    qos = [QOS("normal", priority=10)]
    limits = [
        QOSLimits(max_jobs_per_user=20),
        QOSLimits(max_tres_per_user={"cpu": 512}),
        QOSLimits(max_tres_per_account={"cpu": 2048}),
        QOSLimits(max_jobs_per_account=200),
        QOSLimits(max_submit_jobs_per_user=400, max_submit_jobs_per_account=4000),
        QOSLimits(max_jobs_accrue_per_user=30, max_jobs_accrue_per_account=300),
        QOSLimits(grp_tres={"cpu": 20_000}),
        QOSLimits(grp_jobs=1500),
        QOSLimits(min_tres_per_job={"cpu": 1}),
        QOSLimits(max_wall_duration_per_job=2880),
        QOSLimits(grp_tres_mins={"cpu": BIG}),
        QOSLimits(grp_tres_run_mins={"cpu": 500_000_000}),
        QOSLimits(grp_wall=BIG),
        QOSLimits(grp_jobs_accrue=5000),
        QOSLimits(grp_submit_jobs=20_000),
        QOSLimits(max_tres_per_job={"node": 64}),
        QOSLimits(max_tres_per_node={"mem": 512_000}),
        QOSLimits(max_tres_mins_per_job={"cpu": 100_000_000}),
    ]
    for i, lim in enumerate(limits, start=1):
        flags = frozenset({"DenyOnLimit"} if i == 3 else {"NoDecay"} if i == 11 else set())
        qos.append(
            QOS(f"q{i}", priority=i * 5, flags=flags, usage_factor=rng.choice((0.5, 1.0, 2.0)), limits=lim)
        )
    qos.append(
        QOS("gpu_part", limit_factor=1.5, limits=QOSLimits(max_jobs_per_user=50, grp_tres={"cpu": 40_000}))
    )
    assert len(qos) == 20
    names = [q.name for q in qos if q.name != "gpu_part"]
    user_rows = []
    pairs = []
    for u in range(users):
        user = f"u{u}"
        group = groups[u % len(groups)]
        assocs.append(
            Association(
                group, user, limits=AssocLimits(max_jobs=rng.choice((None, 10, 30)) if u % 3 else None)
            )
        )
        user_rows.append(User(user, group))
        pairs.append((user, group))
    partitions = [PartitionLimits("gpu", max_time=1440, qos="gpu_part")]
    policy = Policy(
        associations=assocs,
        qos=qos,
        users=user_rows,
        partitions=partitions,
        enforce=Enforce.parse("limits,qos,safe"),
    )
    return policy, [(u, g) for u, g in pairs] + [("", n) for n in names]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--nodes", type=int, default=2_048)
    ap.add_argument("--users", type=int, default=2_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--random-qos", action="store_true", help="every job picks any of the 19 QOS (worst case for caching)"
    )
    ap.add_argument("--no-gc", action="store_true", help="run with the cyclic garbage collector disabled")
    args = ap.parse_args()
    if args.no_gc:
        gc.disable()

    rng = random.Random(args.seed)
    base = build(args.jobs, args.nodes, args.seed)
    policy, rows = accounting(rng, args.users)
    users = rows[: args.users]
    qnames = [name for user, name in rows[args.users :]]

    info: dict[int, JobLimitsInfo] = {}
    # Users submit to a couple of QOS each, as they do; --random-qos spreads every job.
    user_qos = {user: rng.sample(qnames, 2) for user, _ in users}

    def assign(job):
        user, account = users[rng.randrange(len(users))]
        info[job.job_id] = JobLimitsInfo(
            account=account,
            qos=rng.choice(qnames if args.random_qos else user_qos[user]),
            usage_factor=1.0 if job.state == "RUNNING" else None,
        )
        return dataclasses.replace(job, user=user)

    snap = Snapshot(
        now=base.now,
        nodes=base.nodes,
        partitions=base.partitions,
        pending=tuple(assign(j) for j in base.pending),
        running=tuple(assign(j) for j in base.running),
        config=base.config,
    )
    usage = {
        a.key: UsageRecord(raw_usage=rng.uniform(0, 1e6), tres_seconds={"cpu": rng.uniform(0, 1e6)})
        for a in policy.assocs.values()
    }
    usage.update({qos_key(q): UsageRecord(tres_seconds={"cpu": rng.uniform(0, 1e6)}) for q in policy.qos})
    assert assoc_key("root") in usage

    def timed(plugins):
        times = []
        result = None
        for _ in range(args.runs):
            t0 = time.perf_counter()
            result = schedule(snap, plugins())
            times.append(time.perf_counter() - t0)
        return statistics.median(times), min(times), result

    plain, _, _ = timed(list)

    def with_limits():
        return [LimitsPlugin(policy, jobs=info, usage=usage)]

    # The first pass resolves every (user, account, partition, QOS) key; later passes find
    # them cached on the Policy, which lives until a limit changes.
    t0 = time.perf_counter()
    cold = schedule(snap, [LimitsPlugin(policy, jobs=info, usage=usage)])
    cold_time = time.perf_counter() - t0
    median, best, result = timed(with_limits)
    assert result is not None and cold is not None
    reasons: dict[str, int] = {}
    for p in result.pending:
        reasons[p.reason] = reasons.get(p.reason, 0) + 1
    print(
        f"limits pass: {args.jobs} pending, {len(snap.running)} running, {args.nodes} nodes, "
        f"{args.users} users, {len(policy.assocs) - args.users - 1} accounts, {len(policy.qos)} QOS"
    )
    print(f"scheduler alone: median {plain * 1000:.1f} ms")
    print(f"with limits, first pass (resolving {len(policy._plans)} keys): {cold_time * 1000:.1f} ms")
    print(f"with limits: median {median * 1000:.1f} ms over {args.runs} runs (min {best * 1000:.1f} ms)")
    print(f"started {result.stats.started} ({result.stats.backfilled} by backfill)")
    print("pending reasons: " + ", ".join(f"{k}={v}" for k, v in sorted(reasons.items())))


if __name__ == "__main__":
    main()
