"""The embedded server's HTTP helper processes under concurrent API clients: the jobs they
store start, run and end as any other, and a helper that dies is passed over."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.e2e.harness import make_cluster, started

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(bool(os.environ.get("FSCHED_REDIS_URL")), reason="embedded"),
]


@pytest.fixture(scope="module")
def helped(tmp_path_factory):
    with started(make_cluster(tmp_path_factory, "embedded", env={"FSCHED_HTTP_HELPERS": "2"})) as c:
        yield c


def _helpers(server_pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == server_pid and b"config.helpers" in cmdline:
                found.append(int(entry))
    return found


def _ended(pid: int) -> bool:
    """Dead, its socket closed (a zombie until the server reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _cpu(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def _submit(cluster, count: int, out_dir: Path, clients: int = 8) -> list[int]:
    """``count`` jobs from ``clients`` API clients at once, each on its own connection."""
    token = json.loads(Path(cluster.env["FSCHED_CLI_CONFIG"]).read_text())["token"]
    host, port = cluster.url.split("//", 1)[1].rsplit(":", 1)
    body = json.dumps(
        {"wrap": "echo job $SLURM_JOB_ID", "output": f"{out_dir}/%j.out", "work_dir": str(out_dir)}
    )
    ids: list[int] = []
    failures: list[str] = []

    def client(n: int) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        for _ in range(n):
            conn.request(
                "POST",
                "/api/jobs/",
                body,
                {"Authorization": f"Token {token}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            answer = response.read()
            if response.status != 201:
                failures.append(f"{response.status} {answer[:200]!r}")
            else:
                ids.extend(json.loads(answer)["job_ids"])
        conn.close()

    threads = [threading.Thread(target=client, args=(count // clients,)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]
    return ids


def _all_ran(cluster, ids: list[int], out_dir: Path) -> None:
    def done():
        jobs = cluster.jobs(*ids)
        return len(jobs) == len(ids) and all(j["state"] == "COMPLETED" for j in jobs.values())

    cluster.wait_for(f"{len(ids)} jobs to complete", done, timeout=120)
    for job_id in ids:
        assert (out_dir / f"{job_id}.out").read_text() == f"job {job_id}\n"


def test_concurrent_submissions_are_served_by_helpers_and_run(helped, tmp_path):
    helpers = helped.wait_for(
        "two HTTP helpers", lambda: len(_helpers(helped.server.pid)) == 2 and _helpers(helped.server.pid)
    )
    before = sum(_cpu(p) for p in helpers)
    ids = _submit(helped, 400, tmp_path)
    assert len(set(ids)) == 400
    # The helpers did the work (about a millisecond of CPU per submission).
    assert sum(_cpu(p) for p in helpers) - before > 0.1
    _all_ran(helped, ids, tmp_path)


def test_a_helper_that_dies_is_passed_over(helped, tmp_path):
    victim, survivor = _helpers(helped.server.pid)
    os.kill(victim, signal.SIGKILL)
    helped.wait_for("the helper to end", lambda: _ended(victim))
    ids = _submit(helped, 80, tmp_path)
    _all_ran(helped, ids, tmp_path)
    assert survivor in _helpers(helped.server.pid)
