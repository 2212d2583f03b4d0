"""The crash test: 300 short jobs through `fsched sbatch` while the agent, the controller
and both together are killed with SIGKILL, during launches and during completions, at
moments drawn from a fixed seed; in distributed mode PostgreSQL and Redis are restarted
too.  Afterwards every accepted job ran exactly once per recorded run, never two runs
at once, its completion was recorded once, and none was lost.

Each run of a job appends ``start``/``end`` markers to one shared file and holds a lock
named after its job id for as long as it runs: a second run of the same job at the same
time finds the lock taken and writes ``overlap``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cluster.core.states import FINISHED_JOB_STATES
from tests.e2e.crash_faults import Fault, plan_faults
from tests.e2e.harness import _modes, make_cluster, started

pytestmark = pytest.mark.e2e

SEED = 20261201
JOBS = 300
SUBMITTERS = 2
PACE = 0.25  # seconds each submitter waits between submissions: 300 jobs in about 70 s
FINISHED = {s.value for s in FINISHED_JOB_STATES}
UNKNOWN_OUTCOME = "Whether the job was stored is unknown"
# The reason cluster.services.launch_watch records when it gives a launch up.
LAUNCH_GIVEN_UP = "not found BatchStartTime after startup"

SCRIPT = """#!/bin/bash
#SBATCH -o {out}/%j.out
exec 9>>"{locks}/$SLURM_JOB_ID"
flock -n 9 || echo "overlap $SLURM_JOB_ID" >> "{markers}"
echo "start $SLURM_JOB_ID ${{SLURM_RESTART_COUNT:--}} $$" >> "{markers}"
sleep {sleep}
echo "end $SLURM_JOB_ID ${{SLURM_RESTART_COUNT:--}} $$" >> "{markers}"
"""


@dataclass
class Stream:
    """What the submitters saw: job ids printed, and submissions with no job id."""

    accepted: dict[int, str] = field(default_factory=dict)  # job id -> job name
    unknown: list[str] = field(default_factory=list)  # names whose outcome sbatch could not tell
    refused: list[tuple[str, str]] = field(default_factory=list)  # (name, sbatch's error): not stored
    lock: threading.Lock = field(default_factory=threading.Lock)
    attempts: int = 0
    in_flight: int = 0

    def next_name(self) -> str | None:
        """The next submission's job name; None once JOBS are accepted or on their way."""
        with self.lock:
            if len(self.accepted) + len(self.unknown) + self.in_flight >= JOBS:
                return None
            self.attempts += 1
            self.in_flight += 1
            return f"crash-{self.attempts}"


def submitter(cluster, stream: Stream, script: Path, cwd: Path) -> None:
    while (name := stream.next_name()) is not None:
        result = cluster.cli("sbatch", "--parsable", "-J", name, str(script), check=False, cwd=cwd)
        with stream.lock:
            stream.in_flight -= 1
            if result.returncode == 0:
                stream.accepted[int(result.stdout.split(";")[0])] = name
            elif UNKNOWN_OUTCOME in result.stderr:
                stream.unknown.append(name)
            else:
                stream.refused.append((name, result.stderr.strip()))
        # Paced so that the stream outlasts the faults; after a failure, as a user would,
        # try again in a moment.
        time.sleep(PACE if result.returncode == 0 else 0.2)


def read_markers(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def job_events(cluster, job_ids: list[int]) -> dict[int, list[tuple[str, str, str]]]:
    """Each job's recorded transitions (old state, new state, reason), oldest first, from
    the database the controller writes (the API does not list events)."""
    code = (
        "import json; from cluster.models import Event; "
        f"ids = {sorted(job_ids)!r}; out = {{}}\n"
        "for e in Event.objects.filter(kind='job', job_id__in=ids).order_by('time', 'id'):\n"
        "    out.setdefault(e.job_id, []).append((e.old_state, e.new_state, e.reason))\n"
        "print(json.dumps(out))"
    )
    return {
        int(k): [tuple(t) for t in v]
        for k, v in json.loads(cluster.manage("shell", "-c", code).splitlines()[-1]).items()
    }


@pytest.mark.parametrize("mode", _modes())
def test_every_accepted_job_runs_once_through_crashes(mode, tmp_path_factory, tmp_path):
    shared = tmp_path / "shared"
    for sub in ("out", "locks"):
        (shared / sub).mkdir(parents=True)
    markers = shared / "markers"
    script = shared / "job.sh"
    script.write_text(SCRIPT.format(out=shared / "out", locks=shared / "locks", markers=markers, sleep=0.5))
    rng = random.Random(SEED)
    faults = plan_faults(rng, distributed=mode == "distributed")
    log: list[str] = []

    with started(make_cluster(tmp_path_factory, mode), mode) as cluster:
        stream = Stream()
        threads = [
            threading.Thread(target=submitter, args=(cluster, stream, script, shared), daemon=True)
            for _ in range(SUBMITTERS)
        ]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for fault in faults:
            if not any(t.is_alive() for t in threads):
                log.append(f"stream over before {fault}")
                break
            log.append(inject(cluster, fault, markers, rng, began))
        for thread in threads:
            thread.join(timeout=240)
        submitted_in = time.monotonic() - began

        def all_finished():
            jobs = cluster.jobs()
            mine = {j["job_id"]: j for j in jobs.values() if j["name"].startswith("crash-")}
            done = all(j["state"] in FINISHED for j in mine.values()) and set(stream.accepted) <= set(mine)
            return mine if done else None

        jobs = cluster.wait_for("every job to finish", all_finished, timeout=240, interval=1)
        events = job_events(cluster, list(jobs))

    report = check(stream, jobs, read_markers(markers), events)
    requeued = sum(1 for j in jobs.values() if j["restart_count"])
    summary = (
        f"{mode}: {len(stream.accepted)} accepted, {len(stream.unknown)} unknown, {len(stream.refused)} "
        f"refused in {stream.attempts} attempts over {submitted_in:.0f} s; {requeued} jobs requeued; "
        "faults:\n  " + "\n  ".join(log)
    )
    print(summary)
    assert not report, summary + "\nproblems:\n  " + "\n  ".join(report[:40])


def check(
    stream: Stream, jobs: dict[int, dict], markers: list[list[str]], events: dict[int, list[tuple[str, str]]]
) -> list[str]:
    problems: list[str] = []
    by_name = Counter(j["name"] for j in jobs.values())
    problems += [f"{n} submitted once, stored {c} times" for n, c in by_name.items() if c > 1]
    accepted = dict(stream.accepted)
    for job in jobs.values():  # an unknown outcome that was stored counts as accepted
        if job["name"] in stream.unknown:
            accepted[job["job_id"]] = job["name"]
    refused = {name for name, _ in stream.refused}
    # A database or Redis restarting is answered 503 (cluster/unavailable.py), never a bare 500.
    problems += [
        f"{name} refused with a server error: {why}"
        for name, why in stream.refused
        if "HTTP 500" in why or "Internal Server Error" in why
    ]
    problems += [
        f"job {j['job_id']} ({j['name']}) stored after a 'not stored' error"
        for j in jobs.values()
        if j["name"] in refused
    ]
    problems += [f"job {j} was accepted and is gone" for j in accepted if j not in jobs]
    problems += [
        f"job {j} stored but never reported to its submitter"
        for j, job in jobs.items()
        if job["name"] not in stream.unknown and j not in stream.accepted
    ]

    starts = Counter(int(m[1]) for m in markers if m[0] == "start")
    ends = Counter(int(m[1]) for m in markers if m[0] == "end")
    overlaps = Counter(int(m[1]) for m in markers if m[0] == "overlap")
    problems += [f"job {j} ran twice at once" for j in overlaps]
    problems += [f"markers of job {j}, which was never accepted" for j in starts if j not in accepted]
    for job_id in sorted(accepted):
        job = jobs.get(job_id)
        if job is None:
            continue
        runs = job["restart_count"] + 1
        if job["state"] != "COMPLETED":
            problems.append(f"job {job_id} ended {job['state']} ({job.get('reason')}), not COMPLETED")
        history = events.get(job_id, [])
        # A run whose launch never reached the node (lost while Redis or the server was
        # down) is given up after BatchStartTimeout and requeued: it counts in Restarts
        # but never started. No run may start more often than the controller launched it.
        never_started = sum(1 for _old, _new, why in history if LAUNCH_GIVEN_UP in why)
        if not max(1, runs - never_started) <= starts[job_id] <= runs:
            problems.append(
                f"job {job_id} started {starts[job_id]} times, Restarts={job['restart_count']}, "
                f"{never_started} launch(es) given up: {history}"
            )
        if job["state"] == "COMPLETED" and ends[job_id] < 1:
            problems.append(f"job {job_id} COMPLETED but no run of it reached its end")
        terminal = [new for _old, new, _why in history if new in FINISHED]
        if len(terminal) != 1:
            problems.append(f"job {job_id}: {len(terminal)} terminal events {terminal}")
        ran = sum(1 for _old, new, _why in history if new == "RUNNING")
        if ran != runs:
            problems.append(f"job {job_id}: {ran} RUNNING events for {runs} run(s): {history}")
    return problems


def inject(cluster, fault: Fault, markers: Path, rng: random.Random, began: float) -> str:
    """Wait for the fault's moment, do it, bring back what it stopped; one log line."""
    time.sleep(fault.after)
    waited = fault.moment.wait(markers, timeout=15)
    time.sleep(rng.uniform(0, 0.05))
    at = time.monotonic() - began
    down = rng.uniform(0.2, 2.0)
    if fault.services:
        for service in fault.services:
            subprocess.run(["bash", "-c", os.environ[service.env]], check=True, timeout=120)
    if fault.processes:
        cluster.kill(*fault.processes)
        time.sleep(down)
        cluster.restart(*fault.processes)
    return f"{at:6.1f} s {fault} ({'on cue' if waited else 'cue timed out'}), down {down:.1f} s"


def test_two_posts_with_one_idempotency_key_make_one_job(cluster, tmp_path):
    """The controller, over sbatch's own HTTP client: a repeated key gets the first job."""
    from cli.client import Client, load_config

    token = load_config({"FSCHED_CLI_CONFIG": cluster.env["FSCHED_CLI_CONFIG"]})["token"]
    body = {"wrap": "true", "name": "idem-e2e", "work_dir": str(tmp_path), "hold": True, "environment": {}}
    key = {"Idempotency-Key": "e2e-one-key"}
    first = Client(url=cluster.url, token=token).request("POST", "/api/jobs/", body, headers=key)
    again = Client(url=cluster.url, token=token).request("POST", "/api/jobs/", body, headers=key)
    assert again == first
    assert [j["job_id"] for j in cluster.jobs().values() if j["name"] == "idem-e2e"] == [first["job_id"]]
    cluster.cli("scancel", str(first["job_id"]))
