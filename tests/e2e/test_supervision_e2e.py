"""`make run` (python -m config.demo) under kill -9: the agent and the controller are
restarted with their crash logged, the other keeps running, SIGTERM still stops all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import DEMO_CONF, ROOT, E2ECluster, all_up, free_port

pytestmark = pytest.mark.e2e


def children(pid: int) -> dict[str, int]:
    """The demo's controller and agent processes: {"server": pid, "agent": pid}."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            # python .../fsched server|agent ...
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            words = [w for w in argv[1:3] if w in (b"server", b"agent")]
            if words:
                found[words[0].decode()] = int(child)
    return found


def running(demo: subprocess.Popen, log: Path) -> bool:
    if demo.poll() is not None:
        raise AssertionError(f"make run exited with status {demo.returncode}:\n{log.read_text()}")
    return "fsched is running" in log.read_text()


def test_make_run_restarts_a_killed_agent_and_controller(tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "FSCHED_STATE_DIR": str(tmp_path / "var"),
        "FSCHED_CONF_DIR": str(DEMO_CONF),
        "FSCHED_PORT": str(port),
        "FSCHED_CLI_CONFIG": str(tmp_path / "cli.json"),
        "FSCHED_DATABASE_URL": "",
        "FSCHED_REDIS_URL": "",
        "FSCHED_HEALTH_INTERVAL": "1",
    }
    env.pop("FSCHED_AGENT_KEY", None)
    log = tmp_path / "make-run.log"
    with open(log, "wb") as out:
        demo = subprocess.Popen(
            [sys.executable, "-m", "config.demo"], env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
        )
    # Only to drive the CLI with the demo's settings; it starts nothing.
    view = E2ECluster(state_dir=tmp_path / "var", conf_dir=DEMO_CONF, port=port, env=env)
    try:
        view.wait_for("make run to start", lambda: running(demo, log), timeout=120)
        view.wait_for("all demo nodes idle", lambda: all_up(view.nodes()))
        first = view.wait_for("both processes", lambda: len(children(demo.pid)) == 2 and children(demo.pid))

        os.kill(first["agent"], signal.SIGKILL)
        again = view.wait_for(
            "a new agent",
            lambda: (c := children(demo.pid)).get("agent", first["agent"]) != first["agent"] and c,
        )
        assert again["server"] == first["server"]  # the controller kept running
        view.wait_for("the nodes idle again", lambda: all_up(view.nodes()))
        text = log.read_text()
        assert f"make run: agent (pid {first['agent']}) was killed by signal 9 (SIGKILL)" in text
        assert f"make run: agent restarted (pid {again['agent']}, restart 1)" in text

        os.kill(again["server"], signal.SIGKILL)
        third = view.wait_for(
            "a new controller",
            lambda: (c := children(demo.pid)).get("server", again["server"]) != again["server"] and c,
        )
        assert third["agent"] == again["agent"]  # the agent rides it out and reconnects
        view.wait_for("the API back", lambda: view.cli("sinfo", check=False).returncode == 0)
        job = int(view.cli("sbatch", "--parsable", "--wrap", "true", cwd=tmp_path).stdout)
        view.wait_for("a job to complete", lambda: view.jobs(job)[job]["state"] == "COMPLETED")
        assert f"make run: controller (pid {again['server']}) was killed by signal 9" in log.read_text()

        demo.send_signal(signal.SIGTERM)
        assert demo.wait(30) == 0
        # make run waits for what it stops: both were reaped before it exited.
        assert not [pid for pid in third.values() if Path(f"/proc/{pid}").exists()]
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
