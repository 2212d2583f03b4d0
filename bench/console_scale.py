"""Benchmark: the console and the API at scale (issue #15's figures).

    .venv/bin/python bench/console_scale.py [--nodes 10000] [--jobs 100000] [--days 365] [--runs 30]

Builds a fresh embedded database in a temporary state directory: ``--nodes`` nodes in one
partition, ``--jobs`` jobs (most ended, spread over ``--days`` days of history, some running
and pending now), then rolls the history up as the report cycle does. It then times, each
``--runs`` times through Django's test client in this process (server time, no network):
the job-list page (first page, filtered, and the last page), the node grid, the API's job
list (first page, filtered), and the usage reports over 30 and 365 days. It prints the
median and the 99th percentile of each, against the issue's targets: 300 ms for the pages
and the API, 2 s for the reports.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGE_TARGET_MS, REPORT_TARGET_MS = 300.0, 2000.0


def _setup(state: Path, nodes: int) -> None:
    conf = state / "conf"
    conf.mkdir()
    last = f"n{nodes:05d}"
    (conf / "slurm.conf").write_text(
        "ClusterName=scale\nSlurmctldHost=localhost\nSelectType=select/cons_tres\n"
        "PriorityType=priority/multifactor\n"
        f"NodeName=n[00001-{last[1:]}] CPUs=64 RealMemory=256000 State=UNKNOWN\n"
        f"PartitionName=batch Nodes=n[00001-{last[1:]}] Default=YES MaxTime=INFINITE State=UP\n"
    )
    os.environ.update(
        FSCHED_STATE_DIR=str(state),
        FSCHED_CONF_DIR=str(conf),
        DJANGO_SETTINGS_MODULE="config.settings",
        FSCHED_LOG_LEVEL="WARNING",
    )
    from cluster.core.state_files import create_keys

    create_keys(state)  # what the bootstrap makes: the secret key of the sessions
    import django

    django.setup()
    from django.core.management import call_command

    from cluster.services.configuration import config_load

    call_command("migrate", verbosity=0)
    config_load(path=conf / "slurm.conf")


def _jobs(count: int, nodes: int, days: int, seed: int) -> None:
    from django.utils import timezone

    from cluster.models import Job, Node
    from cluster.services import rows

    rng = random.Random(seed)
    now = timezone.now()
    names = [f"n{i:05d}" for i in range(1, nodes + 1)]
    Node.objects.update(base_state="IDLE")
    users = [f"user{i:03d}" for i in range(200)]
    accounts = [f"acct{i:02d}" for i in range(20)]
    running, pending = count // 50, count // 20
    batch = []
    for job_id in range(1, count + 1):
        user = rng.choice(users)
        cpus = rng.choice((1, 1, 2, 4, 8, 16, 64))
        row = {
            "id": job_id,
            "name": rng.choice(("sim", "train", "post", "wrap", "array-step")),
            "user": user,
            "account": accounts[hash(user) % len(accounts)],
            "qos": "normal",
            "partition": "batch",
            "num_tasks": cpus,
            "cpus_per_task": 1,
            "time_limit": rng.choice((60, 240, 1440)),
            "priority": rng.randint(1, 100000),
        }
        if job_id > count - pending:
            submit = now - timedelta(minutes=rng.randint(1, 600))
            row.update(state="PENDING", reason="Priority", submit_time=submit, eligible_time=submit)
        elif job_id > count - pending - running:
            node = names[(job_id * 7) % nodes]
            start = now - timedelta(minutes=rng.randint(1, 600))
            row.update(
                state="RUNNING", submit_time=start - timedelta(minutes=5), eligible_time=start,
                start_time=start, node_list=node, batch_host=node, alloc={node: [cpus, 0]},
            )  # fmt: skip
        else:
            submit = now - timedelta(days=days) + timedelta(seconds=rng.randint(0, days * 86400 - 7200))
            start = submit + timedelta(seconds=rng.randint(0, 3600))
            end = start + timedelta(seconds=rng.randint(60, 7200))
            node = names[job_id % nodes]
            state = rng.choice(("COMPLETED",) * 8 + ("FAILED", "CANCELLED", "TIMEOUT"))
            row.update(
                state=state, submit_time=submit, eligible_time=submit, start_time=start, end_time=end,
                node_list=node, batch_host=node, final_state=state,
            )  # fmt: skip
        batch.append(row)
        if len(batch) == 5000:
            rows.insert_values(Job, batch)
            batch = []
    rows.insert_values(Job, batch)


def _roll_up(days: int) -> float:
    from django.utils import timezone

    from reports import services

    started = time.perf_counter()
    now = timezone.now()
    # The cycle catches up a bounded stretch per run: run it until it has caught up.
    for _ in range(days * 2):
        if services.report_rollup(now=now).startswith("rolled 0 hours"):
            break
    return time.perf_counter() - started


def _time(client, url: str, runs: int) -> tuple[float, float]:
    # One request first, not counted: the process's first page compiles its templates and
    # fills its caches once, which a server does at its first request, not at every one.
    client.get(url)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code} {response.content[:300]!r}")
    times.sort()
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
    return statistics.median(times), p99


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/console_scale.py")
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--jobs", type=int, default=100000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fsched-console-scale-") as tmp:
        started = time.perf_counter()
        _setup(Path(tmp), args.nodes)
        _jobs(args.jobs, args.nodes, args.days, args.seed)
        built = time.perf_counter() - started
        rolled = _roll_up(args.days)

        from django.contrib.auth import get_user_model
        from django.test import Client
        from rest_framework.test import APIClient

        from cluster.services.api_tokens import token_issue

        admin = get_user_model().objects.create_superuser("bench-admin", password=None)
        browser = Client()
        browser.force_login(admin)
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(admin)[1]}")
        pages = args.jobs // 100 + 1
        today = time.strftime("%Y-%m-%d")
        plan = [
            ("job list, first page (all states)", browser, "/jobs/?state=all", PAGE_TARGET_MS),
            ("job list, filtered (user, state)", browser, "/jobs/?state=all&user=user007", PAGE_TARGET_MS),
            ("job list, last page", browser, f"/jobs/?state=all&page={pages}", PAGE_TARGET_MS),
            ("node grid", browser, "/nodes/", PAGE_TARGET_MS),
            ("API job list, first page", api, "/api/jobs/?state=all", PAGE_TARGET_MS),
            ("API job list, filtered", api, "/api/jobs/?state=all&user=user007", PAGE_TARGET_MS),
        ]
        for report in ("utilization", "usage"):
            for days in (30, 365):
                start = time.strftime("%Y-%m-%d", time.localtime(time.time() - days * 86400))
                url = f"/reports/?report={report}&start={start}&end={today}"
                plan.append((f"{report} report over {days} days", browser, url, REPORT_TARGET_MS))
        print(
            f"console at scale: {args.nodes} nodes, {args.jobs} jobs over {args.days} days "
            f"(built in {built:.0f} s, rolled up in {rolled:.0f} s), {args.runs} runs each"
        )
        print(f"  {'figure':<40} {'median ms':>10} {'p99 ms':>9} {'target':>8}")
        for name, client, url, target in plan:
            median, p99 = _time(client, url, args.runs)
            mark = "ok" if p99 <= target else "OVER"
            print(f"  {name:<40} {median:10.1f} {p99:9.1f} {target:8.0f} {mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
