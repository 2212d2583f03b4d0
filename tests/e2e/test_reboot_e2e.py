"""``scontrol reboot`` end to end (#13 point 8): a real controller, the real agent and CLI,
and a RebootProgram that "reboots" the node the way the demo's nodes can be rebooted: it
records the call and kills the agent that runs it (as a power cut would); the test then
starts the agent again, as ``make run`` or systemd restart a crashed agent. The node is back
when that agent registers with its new boot time.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import DEMO_CONF, E2ECluster, make_cluster, started

pytestmark = pytest.mark.e2e

REBOOT = """#!/bin/sh
echo "$SLURM_NODE_NAME $*" >> {log}
kill -KILL $PPID
"""


@pytest.fixture(scope="module")
def reboot_cluster(tmp_path_factory) -> Iterator[tuple[E2ECluster, Path]]:
    conf = tmp_path_factory.mktemp("reboot-conf") / "conf"
    shutil.copytree(DEMO_CONF, conf)
    log = conf / "reboots.log"
    script = conf / "reboot"
    script.write_text(REBOOT.format(log=log))
    script.chmod(0o755)
    with open(conf / "slurm.conf", "a") as f:
        f.write(f'RebootProgram="{script} --now"\n')
    with started(make_cluster(tmp_path_factory, "embedded", conf_dir=conf)) as c:
        yield c, log


def state(c: E2ECluster, node: str) -> str:
    return c.cli("sinfo", "-h", "-N", "-n", node, "-o", "%t").stdout.strip()


def show(c: E2ECluster, node: str) -> dict[str, str]:
    out = c.cli("scontrol", "show", "node", node, "-o").stdout
    return dict(w.split("=", 1) for w in out.split() if "=" in w)


def restart_agent_after_reboot(c: E2ECluster, log: Path, node: str, calls: int, issued: str) -> None:
    """Wait for the RebootProgram's call and the agent it killed, then start the agent."""
    c.wait_for(f"RebootProgram run for {node}", lambda: log.exists() and log.read_text().count("\n") == calls)
    assert log.read_text().splitlines()[-1] == f"{node} --now"
    assert c.agent is not None
    c.wait_for("the agent to be gone", lambda: c.agent.poll() is not None, timeout=10)
    assert state(c, node) == "boot^"
    assert show(c, node)["State"] == issued
    c.start_agent()


def test_reboot_waits_for_the_jobs_then_the_agent_restarts_the_node(reboot_cluster) -> None:
    c, log = reboot_cluster
    booted = c.nodes()["node01"]["boot_time"]
    job = c.cli("sbatch", "-w", "node01", "-t", "1", "--wrap", "sleep 4").stdout.split()[-1]
    c.wait_for("the job to run", lambda: c.jobs(int(job))[int(job)]["state"] == "RUNNING")
    assert c.cli("scontrol", "reboot", "node01").returncode == 0
    # Without ASAP the node keeps its job and may take others; "@" while it waits.
    assert state(c, "node01") == "mix@"
    fields = show(c, "node01")
    assert fields["State"] == "MIXED+REBOOT_REQUESTED"
    restart_agent_after_reboot(c, log, "node01", calls=1, issued="DOWN+REBOOT_ISSUED")
    c.wait_for("node01 back in service", lambda: state(c, "node01") == "idle", timeout=60)
    assert c.nodes()["node01"]["boot_time"] > booted
    assert c.jobs(int(job))[int(job)]["state"] == "COMPLETED"


def test_asap_with_nextstate_down_leaves_the_node_down_after_its_reboot(reboot_cluster) -> None:
    c, log = reboot_cluster
    c.wait_for("every node up", lambda: state(c, "node02") == "idle")
    done = c.cli("scontrol", "reboot", "ASAP", "nextstate=DOWN", "reason=firmware", "node02")
    assert done.returncode == 0 and done.stderr == ""
    # ASAP drained it: the drain shows until the node is back, then goes.
    restart_agent_after_reboot(c, log, "node02", calls=2, issued="DOWN+DRAIN+REBOOT_ISSUED")
    c.wait_for("node02 registered", lambda: state(c, "node02") == "down", timeout=60)
    assert show(c, "node02")["State"] == "DOWN"
    out = c.cli("scontrol", "show", "node", "node02").stdout
    assert "Reason=firmware : reboot issued : reboot complete [" in out
    # An unknown node is refused, with nothing changed.
    bad = c.cli("scontrol", "reboot", "node99", check=False)
    assert (
        bad.returncode == 1
        and bad.stderr == "scontrol_reboot_nodes error: Invalid node name specified: node99\n"
    )
