"""Failures, with real processes: an agent killed with -9, a controller restarted, a wrong key."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.e2e.harness import FSCHED, make_cluster

pytestmark = pytest.mark.e2e


@pytest.fixture
def embedded(tmp_path_factory):
    c = make_cluster(tmp_path_factory, "embedded")
    c.start_server()
    yield c
    c.stop()


def completions_of(cluster, job_id: int) -> int:
    out = cluster.manage(
        "shell",
        "-c",
        f"from cluster.models import Event; print(Event.objects.filter(job_id={job_id}, "
        "new_state__in=['COMPLETED', 'FAILED']).count())",
    )
    return int(out.strip().splitlines()[-1])


def test_agent_killed_mid_job_node_down_job_requeued_and_runs_once(embedded, tmp_path):
    c = embedded
    agent = c.start_agent("node[01-04]")
    c.wait_for("node01 up", lambda: c.nodes()["node01"]["state"] == "IDLE")
    marker = tmp_path / "runs"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\necho run >> {marker}\nsleep 4\necho finished\n")
    job_id = int(
        c.cli(
            "sbatch", "-w", "node01", "-o", str(tmp_path / "out-%j"), str(script), cwd=tmp_path
        ).stdout.split()[-1]
    )
    c.wait_for("job running", lambda: c.jobs(job_id)[job_id]["state"] == "RUNNING")
    c.wait_for("job started on the node", marker.exists)
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    c.wait_for("node01 not responding", lambda: "NOT_RESPONDING" in c.nodes()["node01"]["state"], timeout=10)
    node = c.wait_for(
        "node01 down", lambda: (n := c.nodes()["node01"])["base_state"] == "DOWN" and n, timeout=40
    )
    assert node["reason"] == "Not responding"
    job = c.jobs(job_id)[job_id]
    assert job["state"] == "PENDING" and job["restart_count"] == 1
    c.start_agent("node[01-04]")
    job = c.wait_for(
        "the requeued job to complete",
        lambda: (j := c.jobs(job_id)[job_id])["state"] == "COMPLETED" and j,
        timeout=60,
    )
    assert job["restart_count"] == 1
    assert completions_of(c, job_id) == 1
    assert (tmp_path / f"out-{job_id}").read_text().endswith("finished\n")


def test_controller_restart_loses_no_job_and_records_each_completion_once(embedded, tmp_path):
    c = embedded
    c.start_agent()
    c.wait_for("nodes up", lambda: c.nodes()["node01"]["state"] == "IDLE")
    ids = [
        int(
            c.cli(
                "sbatch",
                "-o",
                str(tmp_path / "o-%j"),
                "--wrap",
                f"sleep {2 + i % 3}; echo done-{i}",
                cwd=tmp_path,
            ).stdout.split()[-1]
        )
        for i in range(6)
    ]
    c.wait_for("jobs running", lambda: all(j["state"] == "RUNNING" for j in c.jobs(*ids).values()))
    c._stop(c.server)
    time.sleep(4)  # the jobs end while the controller is away
    c.start_server()

    def all_complete():
        jobs = c.jobs(*ids)
        return jobs if all(j["state"] == "COMPLETED" for j in jobs.values()) else None

    jobs = c.wait_for("all complete after restart", all_complete)
    assert all(j["restart_count"] == 0 for j in jobs.values())
    for i, job_id in enumerate(ids):
        assert completions_of(c, job_id) == 1
        assert (tmp_path / f"o-{job_id}").read_text() == f"done-{i}\n"


def test_agent_with_a_wrong_key_is_refused(embedded):
    c = embedded
    result = subprocess.run(  # noqa: PLW1510 - the exit status is the point
        [
            FSCHED,
            "agent",
            "--nodes",
            "node05",
            "--controller",
            f"ws://127.0.0.1:{c.port}",
            "--spool",
            str(c.state_dir / "bad-agent"),
        ],
        env={**c.env, "FSCHED_AGENT_KEY": "not-the-key"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    # The controller proves its key first: an agent with another key sees it fail, and
    # stops before it sends anything (a proof, a register) or runs anything.
    assert result.returncode == 2
    assert "controller failed to prove the cluster key" in result.stderr
    assert c.nodes()["node05"]["base_state"] == "UNKNOWN"


def test_reconfigure_with_a_bad_line_is_refused(tmp_path_factory, conf_dir):
    c = make_cluster(tmp_path_factory, "embedded", conf_dir=conf_dir)
    c.start_server()
    try:
        with open(conf_dir / "slurm.conf", "a") as f:
            f.write("NodeName=node[40-41 CPUs=4\n")
        result = c.cli("scontrol", "reconfigure", check=False)
        assert result.returncode != 0
        assert "slurm.conf:" in result.stderr and "node[40-41" in result.stderr
        assert "node40" not in c.nodes()
    finally:
        c.stop()
