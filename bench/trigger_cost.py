"""Benchmark: what the database's own triggers cost the writes (#18).

    .venv/bin/python -m bench.trigger_cost [--jobs 2000] [--rounds 3] [--database sqlite|postgresql]

Two sets of triggers write a row beside the rows the services write: the change log
(cluster/services/change_log.py: every write to a project table, for the live kept pass
snapshot) and the submit limits' counts (limits/submit_counts.py: a job becoming active or
not).  This times the same work with them and without them, alternately (``--rounds``
pairs, the median of each): ``--jobs`` single-job submissions through the service
(``job_submit``, the demo cluster's configuration), then the jobs started and ended by
two bulk updates.  ``sqlite``: a fresh database file (embedded mode); ``postgresql``: a
fresh database on the server of FSCHED_DATABASE_URL, dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import store

ROOT = Path(__file__).resolve().parent.parent


def _triggers(on: bool) -> None:
    from django.db import connection

    from cluster.services import change_log
    from limits import submit_counts

    q = connection.ops.quote_name
    if on:
        change_log.install(force=True)
        submit_counts.install()
        return
    change_log.uninstall()
    with connection.cursor() as cursor:
        for name in submit_counts._trigger_names(connection):
            suffix = f" ON {q('cluster_job')}" if connection.vendor == "postgresql" else ""
            cursor.execute(f"DROP TRIGGER {q(name)}{suffix}")


def _round(jobs: int) -> tuple[float, float]:
    """(ms a submission, ms a job's start and end) for ``jobs`` new jobs."""
    from django.contrib.auth import get_user_model

    from cluster.core.states import JobState
    from cluster.models import Job
    from cluster.services.jobs import job_submit

    alice = get_user_model().objects.get(username="alice")
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "debug"}
    t0 = time.perf_counter()
    ids = [job_submit(user=alice, spec=dict(spec)).job_ids[0] for _ in range(jobs)]
    submit = (time.perf_counter() - t0) / jobs
    t0 = time.perf_counter()
    Job.objects.filter(id__in=ids).update(state=JobState.RUNNING)
    Job.objects.filter(id__in=ids).update(state=JobState.COMPLETED)
    transitions = (time.perf_counter() - t0) / jobs
    return submit * 1000, transitions * 1000


def _run(ns: argparse.Namespace) -> None:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection

    from cluster.services.configuration import config_load

    settings.CONF_DIR = ROOT / "examples" / "demo"
    config_load(path=settings.CONF_DIR / "slurm.conf")
    get_user_model().objects.create_user("alice", password="x")  # noqa: S106 - a throwaway database
    print(f"{connection.vendor}: {ns.jobs} submissions, then their starts and ends, per round")
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(ns.rounds):
        for on in (False, True):
            _triggers(on)
            results[on].append(_round(ns.jobs))
    for on in (False, True):
        submit = statistics.median(r[0] for r in results[on])
        transitions = statistics.median(r[1] for r in results[on])
        label = "on " if on else "off"
        print(f"  triggers {label}: submit {submit:.3f} ms a job, start and end {transitions:.3f} ms a job")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    ns = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fsched-trig-") as tmp:
        if ns.database == "sqlite":
            store.migrated(tmp)
            _run(ns)
            return 0
        url = os.environ.get("FSCHED_DATABASE_URL")
        if not url:
            print("--database postgresql needs FSCHED_DATABASE_URL", file=sys.stderr)
            return 2
        from bench.distributed import fresh_database

        with fresh_database(url, f"fsched_bench_trig_{os.getpid()}") as fresh:
            store.migrated(tmp, database_url=fresh)
            try:
                _run(ns)
            finally:
                from django.db import connections

                connections.close_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
