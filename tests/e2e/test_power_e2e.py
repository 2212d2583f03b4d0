"""Power saving end to end: a real controller, the real demo power programs
(examples/demo/power: ResumeProgram starts a node agent, SuspendProgram stops it), the
real CLI.  The configuration is the demo's with short timers, and a test ResumeProgram
that leaves cloud04 down (to see ResumeTimeout) and runs the demo's for the others.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

from tests.e2e.harness import DEMO_CONF, E2ECluster, make_cluster, started

pytestmark = pytest.mark.e2e

# The test ResumeProgram: cloud04 never comes up; the rest go to the demo's program.
NEVER_CLOUD04 = """#!/bin/sh
rest=$(fsched scontrol show hostnames "$1" | grep -v '^cloud04$' | paste -sd, -)
echo "$(date '+%Y-%m-%dT%H:%M:%S') test-resume $* (cloud04 left down)" >>"$FSCHED_STATE_DIR/power/power.log"
[ -z "$rest" ] && exit 0
exec /bin/sh power/resume "$rest"
"""


@pytest.fixture(scope="module")
def power_cluster(tmp_path_factory) -> Iterator[E2ECluster]:
    conf = tmp_path_factory.mktemp("power-conf") / "conf"
    shutil.copytree(DEMO_CONF, conf)
    (conf / "power" / "resume_test").write_text(NEVER_CLOUD04)
    text = (conf / "slurm.conf").read_text()
    for old, new in (
        ('Program="/bin/sh power/resume"', 'Program="/bin/sh power/resume_test"'),
        ("ResumeTimeout=60", "ResumeTimeout=12"),
        ("SuspendTimeout=5", "SuspendTimeout=2"),
        ("power_save_interval=2", "power_save_interval=1"),
    ):
        assert old in text
        text = text.replace(old, new)
    (conf / "slurm.conf").write_text(text)
    parts = (conf / "partitions.conf").read_text().replace("SuspendTime=60", "SuspendTime=3")
    (conf / "partitions.conf").write_text(parts)
    with started(make_cluster(tmp_path_factory, "embedded", conf_dir=conf)) as c:
        yield c


def sbatch(c: E2ECluster, *args: str) -> int:
    return int(c.cli("sbatch", "-p", "cloud", *args).stdout.split()[-1])


def power_log(c: E2ECluster) -> str:
    path = c.state_dir / "power" / "power.log"
    return path.read_text() if path.exists() else ""


def test_a_job_resumes_powered_down_nodes_runs_and_they_power_down_when_idle(
    power_cluster: E2ECluster,
) -> None:
    c = power_cluster
    assert c.nodes()["cloud01"]["state_short"] == "idle~"
    job_id = sbatch(c, "-N", "2", "--wrap", "hostname; sleep 1")
    seen: set[str] = set()

    def done() -> bool:
        state = c.jobs(job_id)[job_id]["state"]
        seen.add(state)
        return state == "COMPLETED"

    c.wait_for("the job to complete on resumed nodes", done, timeout=60, interval=0.2)
    assert "CONFIGURING" in seen  # it waited for its nodes to power up
    job = c.jobs(job_id)[job_id]
    assert job["node_list"] == "cloud[01-02]" and job["exit_code"] == "0:0"
    assert "resume cloud[01-02]" in power_log(c)
    # The demo ResumeProgram kept the SLURM_RESUME_FILE it was given.
    document = json.loads((c.state_dir / "power" / "last_resume.json").read_text())
    assert document["all_nodes_resume"] == "cloud[01-02]"
    (entry,) = document["jobs"]
    assert (entry["job_id"], entry["nodes_alloc"], entry["partition"]) == (job_id, "cloud[01-02]", "cloud")
    # Idle for SuspendTime (3 s): SuspendProgram stops the agents; SuspendTimeout later, "~".
    c.wait_for(
        "cloud01 and cloud02 powered down again",
        lambda: all(c.nodes()[n]["state_short"] == "idle~" for n in ("cloud01", "cloud02")),
        timeout=40,
    )
    assert "suspend cloud" in power_log(c)
    # The state follows SuspendTimeout, not the program: it may still be stopping the agent.
    c.wait_for(
        "SuspendProgram to stop cloud01's agent",
        lambda: not (c.state_dir / "power" / "cloud01.pid").exists(),
        timeout=10,
    )
    show = c.cli("scontrol", "show", "node", "cloud01").stdout
    assert "State=IDLE+CLOUD+POWERED_DOWN" in show


def test_scontrol_power_up_and_down(power_cluster: E2ECluster) -> None:
    c = power_cluster
    denied = c.cli("scontrol", "power", "up", "cloud03", "Reason=x", check=False)
    assert denied.returncode == 1 and "Reason= is only accepted for power down" in denied.stderr
    c.cli("scontrol", "power", "up", "cloud03")
    c.wait_for("cloud03 up", lambda: c.nodes()["cloud03"]["state_short"] == "idle", timeout=30)
    c.cli("scontrol", "update", "NodeName=cloud03", "State=POWER_DOWN")
    c.wait_for("cloud03 down", lambda: c.nodes()["cloud03"]["state_short"] == "idle~", timeout=30)


def test_a_bad_power_configuration_is_refused(power_cluster: E2ECluster) -> None:
    c = power_cluster
    path = c.conf_dir / "slurm.conf"
    good = path.read_text()
    try:
        path.write_text(good + "ResumeRate=-1\n")
        result = c.cli("scontrol", "reconfigure", check=False)
        assert result.returncode == 1
        line = len(good.splitlines()) + 1
        assert f"slurm.conf:{line}: ResumeRate=-1" in result.stderr
    finally:
        path.write_text(good)


def test_a_node_that_never_comes_up_goes_down_and_its_job_is_requeued(power_cluster: E2ECluster) -> None:
    c = power_cluster
    job_id = sbatch(c, "-w", "cloud04", "--wrap", "hostname")
    c.wait_for(
        "cloud04 DOWN after ResumeTimeout",
        lambda: c.nodes()["cloud04"]["state"].startswith("DOWN"),
        timeout=60,
    )
    node = c.nodes()["cloud04"]
    assert node["reason"] == "ResumeTimeout reached" and "POWERED_DOWN" in node["state"]
    job = c.jobs(job_id)[job_id]
    assert job["state"] == "PENDING" and job["restart_count"] == 1
    c.wait_for("ResumeFailProgram ran", lambda: "resume_fail cloud04" in power_log(c), timeout=10)
    c.cli("scancel", str(job_id))
