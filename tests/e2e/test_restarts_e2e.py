"""PostgreSQL and Redis restarting under a distributed cluster lose nothing (issue #11).

PostgreSQL is restarted exactly while completions are in flight (right after a job's
last marker line, its completion on its way), Redis while jobs are being submitted.
Short jobs, each exiting with its own code. Afterwards every job ended once, in the
state its exit code makes it, with that exit code, within a short bound: a completion
the controller dropped is sent again by the agent on the same connection (10 s), so no
job waits RUNNING for its time limit. A submission either printed its job id or was
refused with an answer that says nothing was stored; no 500.

The restart commands are .ci/run's FSCHED_CI_RESTART_POSTGRES / FSCHED_CI_RESTART_REDIS.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from tests.e2e.crash_faults import COMPLETION, POSTGRES, REDIS
from tests.e2e.harness import make_cluster, started
from tests.e2e.test_crash_e2e import FINISHED, job_events, read_markers

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.distributed,
    pytest.mark.skipif(
        not (os.environ.get("FSCHED_DATABASE_URL") and os.environ.get("FSCHED_REDIS_URL")),
        reason="needs FSCHED_DATABASE_URL and FSCHED_REDIS_URL",
    ),
]

SCRIPT = """#!/bin/bash
#SBATCH -o {out}/%j.out
echo "start $SLURM_JOB_ID" >> "{markers}"
sleep {sleep}
echo "end $SLURM_JOB_ID" >> "{markers}"
exit $((SLURM_JOB_ID % 3))
"""
# Once the last job has ended, this long for every job to be recorded: the agent's first
# re-send (10 s) plus a PostgreSQL restart and a scheduler pass, far from a time limit.
SETTLE = 45.0


def restart(service) -> float:
    if not os.environ.get(service.env):
        pytest.skip(f"{service.env} is not set (.ci/run sets it)")
    began = time.monotonic()
    subprocess.run(["bash", "-c", os.environ[service.env]], check=True, timeout=120)
    return time.monotonic() - began


def write_script(tmp_path: Path, sleep: float) -> tuple[Path, Path]:
    (tmp_path / "out").mkdir()
    markers = tmp_path / "markers"
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT.format(out=tmp_path / "out", markers=markers, sleep=sleep))
    return script, markers


def submit(cluster, script: Path, name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return cluster.cli("sbatch", "--parsable", "-J", name, str(script), check=False, cwd=cwd)


def check_ended_once(cluster, job_ids: list[int], markers: Path) -> list[str]:
    """Every job ended once, with its real exit code, within SETTLE of the last end marker."""

    def all_ran() -> bool | None:
        return set(job_ids) <= {int(m[1]) for m in read_markers(markers) if m[0] == "end"} or None

    def finished():
        jobs = cluster.jobs(*job_ids)
        done = len(jobs) == len(job_ids) and all(j["state"] in FINISHED for j in jobs.values())
        return jobs if done else None

    cluster.wait_for("every job to reach its end", all_ran, timeout=120)
    last_end = time.monotonic()
    jobs = cluster.wait_for("every job to finish", finished, timeout=SETTLE, interval=0.5)
    settled = time.monotonic() - last_end
    events = job_events(cluster, job_ids)
    problems = []
    for job_id in job_ids:
        job = jobs[job_id]
        code = job_id % 3
        want = ("COMPLETED" if code == 0 else "FAILED", f"{code}:0")
        if (job["state"], job["exit_code"]) != want:
            problems.append(
                f"job {job_id}: {job['state']} {job['exit_code']} ({job.get('reason')}), not {want}"
            )
        terminal = [new for _old, new, _why in events.get(job_id, []) if new in FINISHED]
        if len(terminal) != 1:
            problems.append(f"job {job_id}: terminal events {terminal}")
    print(f"all {len(job_ids)} jobs recorded {settled:.1f} s after the last one ended")
    return problems


@dataclass
class Outcomes:
    """What the submitters saw: job ids accepted, sbatch's errors for the others."""

    accepted: list[int] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def submit(self, cluster, script: Path, cwd: Path, *, prefix: str, count: int, pace: float) -> None:
        """``count`` submissions named ``prefix-i``, ``pace`` seconds apart."""
        for i in range(count):
            result = submit(cluster, script, f"{prefix}-{i}", cwd)
            if result.returncode == 0:
                self.accepted.append(int(result.stdout.split(";")[0]))
            else:
                self.refused.append(result.stderr.strip())
            time.sleep(pace)


def test_postgres_restarted_while_completions_are_in_flight(tmp_path_factory, tmp_path):
    script, markers = write_script(tmp_path, sleep=1.0)
    seen = Outcomes()
    accepted, refused = seen.accepted, seen.refused
    with started(make_cluster(tmp_path_factory, "distributed"), "distributed") as cluster:
        send = partial(seen.submit, cluster, script, tmp_path, prefix="pg", count=30, pace=0.2)
        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        took = []
        for _ in range(2):
            assert COMPLETION.wait(markers, timeout=60), "no job ended"
            took.append(restart(POSTGRES))
        thread.join(timeout=120)
        print(f"PostgreSQL restarts took {', '.join(f'{t:.1f} s' for t in took)}; "
              f"{len(accepted)} accepted, refused: {refused}")  # fmt: skip
        # While PostgreSQL restarts a submission may be refused, saying that nothing was stored.
        problems = [f"refused without saying so: {r}" for r in refused if "not stored" not in r]
        problems += check_ended_once(cluster, sorted(accepted), markers)
    assert not problems, "\n".join(problems)


def test_redis_restarted_while_jobs_are_submitted(tmp_path_factory, tmp_path):
    script, markers = write_script(tmp_path, sleep=0.3)
    seen = Outcomes()
    accepted, refused = seen.accepted, seen.refused
    with started(make_cluster(tmp_path_factory, "distributed"), "distributed") as cluster:
        sends = [partial(seen.submit, cluster, script, tmp_path, prefix=p, count=15, pace=0.1) for p in "ab"]
        threads = [threading.Thread(target=send, daemon=True) for send in sends]
        for t in threads:
            t.start()
        time.sleep(1.0)
        took = restart(REDIS)
        time.sleep(1.5)
        took += restart(REDIS)
        for t in threads:
            t.join(timeout=120)
        print(f"Redis restarts took {took:.1f} s; {len(accepted)} accepted, {len(refused)} refused")
        stored = cluster.jobs()
        names = sorted(j["name"] for j in stored.values())
        problems = [f"refused with an error: {r}" for r in refused]  # Redis is not where jobs are stored
        problems += [f"{n} stored twice" for n in set(names) if names.count(n) > 1]
        problems += [f"job {j} stored but not reported" for j in stored if j not in accepted]
        problems += check_ended_once(cluster, sorted(accepted), markers)
    assert not problems, "\n".join(problems)
