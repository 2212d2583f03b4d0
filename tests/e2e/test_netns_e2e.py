"""Agents in their own network namespaces reach the controller by a non-loopback address
(scripts/netns-cluster.sh): jobs submitted from the root namespace run on both agents'
nodes, in partitions split across them, and the server sees each agent's own address."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.e2e.harness import ROOT, _modes

pytestmark = pytest.mark.e2e

SCRIPT = ROOT / "scripts" / "netns-cluster.sh"
CANNOT_RUN = 2  # the script's status when this machine cannot host it


def netns_available() -> bool:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    return subprocess.run(["ip", "netns", "list"], capture_output=True, check=False).returncode == 0


@pytest.mark.skipif(not netns_available(), reason="needs root and 'ip netns'")
@pytest.mark.parametrize("mode", _modes())
def test_agents_in_two_namespaces_run_jobs_of_a_controller_on_the_bridge(mode):
    env = dict(os.environ)
    if mode == "embedded":
        env.update({"FSCHED_DATABASE_URL": "", "FSCHED_REDIS_URL": ""})
    result = subprocess.run(
        ["bash", str(SCRIPT)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=150, check=False
    )
    if result.returncode == CANNOT_RUN:
        pytest.skip(result.stderr.strip())
    verdict = [ln for ln in result.stderr.splitlines() if ln.startswith("netns-cluster:")]
    assert result.returncode == 0, "\n".join([*verdict, result.stdout, result.stderr])
    assert f"netns-cluster: OK ({mode})" in result.stdout
    for address in ("10.231.77.11", "10.231.77.12"):
        assert f"accepted fsched-n1's agent from {address}" in result.stdout or (
            f"accepted fsched-n2's agent from {address}" in result.stdout
        )
    listening = next(ln for ln in result.stdout.splitlines() if "fsched server: listening on" in ln)
    assert "http://10.231.77.1:" in listening
    assert f"({mode}: " in listening
