"""Load thresholds with a real controller and a real agent, on the spec's own example
(partition-U7KH5, compute1 State=CLOUD, no power programs): the agent that registers
compute1 brings it up; it reads fed /proc files (``--proc-root``), its heartbeat carries
the indices, ``scontrol show node`` shows them with the thresholds in force, and the load
check drains, stops, continues and undrains as the figures cross the thresholds."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.harness import make_cluster

pytestmark = pytest.mark.e2e

SLURM_CONF = (
    "ClusterName=loadtest\nSlurmctldHost=localhost\nSlurmdTimeout=30\nDisableRootJobs=NO\n"
    "Include partitions.conf\n"
)
PARTITIONS = (
    "\n#\n# PARTITION partition-U7KH5\n"
    "PartitionName=partition-U7KH5 Nodes=compute1 Default=YES "
    "LoadSchedMem=1300 LoadStopMem=1200  LoadSchedUt=80 LoadStopUt=90\n"
    "#   DUMMY\n\n#   NODES\n"
    "NodeName=compute1 CPUs=16 RealMemory=13926  Weight=1 State=CLOUD\n"
)
MEMINFO = "MemTotal:       14260224 kB\nMemFree:         2000000 kB\nMemAvailable:    {kib} kB\n"
STAT = "cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\nprocs_running 3\nprocs_blocked 0\n"


def feed(proc: Path, *, mem_mib: int, busy: int = 0, idle: int = 0) -> None:
    (proc / "meminfo").write_text(MEMINFO.format(kib=mem_mib * 1024))
    (proc / "stat").write_text(STAT.format(busy=busy, idle=idle))


def idle(cluster) -> bool:
    """compute1 up and free: IDLE, with its CLOUD flag but no power state nor drain."""
    state = cluster.nodes()["compute1"]["state"]
    return state.split("+")[0] == "IDLE" and not {"DRAIN", "POWERED_DOWN"} & set(state.split("+"))


def states(cluster, ids: list[int]) -> list[str]:
    out = cluster.cli("squeue", "-h", "-o", "%i %t", "-j", ",".join(map(str, ids))).stdout
    by_id = dict(line.split() for line in out.splitlines())
    return [by_id.get(str(i), "") for i in ids]


def process_state(command: str) -> str:
    """The state letter (ps's first STAT letter) of the one process running ``command``."""
    for line in subprocess.run(
        ["ps", "-eo", "stat=,args="], check=True, capture_output=True, text=True
    ).stdout.splitlines():
        stat, _, args = line.strip().partition(" ")
        if args.strip() == command:
            return stat[0]
    raise AssertionError(f"no process {command!r}")


def test_the_spec_s_example_shows_its_indices_and_thresholds(tmp_path_factory, tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "slurm.conf").write_text(SLURM_CONF)
    (conf / "partitions.conf").write_text(PARTITIONS)
    proc = tmp_path / "proc"
    proc.mkdir()
    feed(proc, mem_mib=5000)
    # A check every second instead of 30 (the indices still come every 5 s).
    cluster = make_cluster(tmp_path_factory, "embedded", conf_dir=conf, env={"FSCHED_LOAD_INTERVAL": "1"})
    try:
        cluster.start_server()
        cluster.wait_http()
        cluster.start_agent("compute1", "--proc-root", str(proc))
        # A State=CLOUD node an agent registers comes up, with no power programs configured.
        cluster.wait_for("compute1 up", lambda: idle(cluster))

        def shown() -> str | None:
            out = cluster.cli("scontrol", "show", "node", "compute1").stdout
            return out if "LoadIndices=" in out else None

        out = cluster.wait_for("the indices of a heartbeat", shown, timeout=30)
        assert "   LoadIndices=mem=5000,ut=0.0,r15s=" in out
        assert "   LoadThresholds=LoadSchedMem=1300,LoadStopMem=1200,LoadSchedUt=80,LoadStopUt=90\n" in out
        assert "FreeMem=5000 " in out  # the same figure, as Slurm's FreeMem is top's avail Mem
        feed(proc, mem_mib=1100, busy=400, idle=100)
        cluster.wait_for(
            "the new figures",
            lambda: "LoadIndices=mem=1100," in cluster.cli("scontrol", "show", "node", "compute1").stdout,
            timeout=30,
        )
        # Below LoadSchedMem: drained by the load check, with the figures, as sinfo -R shows.
        cluster.wait_for("the load drain", lambda: "drain" in cluster.nodes()["compute1"]["state"].lower())
        reasons = cluster.cli("sinfo", "-R", "-h", "-o", "%E|%N").stdout
        assert reasons.startswith("Load: mem=1100<LoadSchedMem=1300|compute1")
        feed(proc, mem_mib=5000, busy=400, idle=100000)  # the CPU idle again, memory back
        cluster.wait_for("the undrain", lambda: idle(cluster), timeout=60)

        # Two real jobs; below LoadStopMem the later one (equal priorities) is stopped: its
        # process really in state T, the job STOPPED; the last one keeps running.
        ids = [
            int(cluster.cli("sbatch", "--parsable", "--wrap", f"sleep {n}", cwd=tmp_path).stdout)
            for n in (601, 602)
        ]
        cluster.wait_for("both running", lambda: states(cluster, ids) == ["R", "R"])
        feed(proc, mem_mib=1100, busy=400, idle=100000)
        cluster.wait_for("one job stopped", lambda: states(cluster, ids) == ["R", "ST"], timeout=30)
        assert process_state("sleep 602") == "T" and process_state("sleep 601") in "RS"
        detail = cluster.cli("scontrol", "show", "job", str(ids[1])).stdout
        assert "JobState=STOPPED" in detail
        feed(proc, mem_mib=5000, busy=400, idle=100000)
        cluster.wait_for("the job continued", lambda: states(cluster, ids) == ["R", "R"], timeout=30)
        assert process_state("sleep 602") in "RS"
        cluster.wait_for("the undrain", lambda: cluster.nodes()["compute1"]["state"] != "DRAIN", timeout=30)
        cluster.cli("scancel", *map(str, ids))
    finally:
        cluster.stop()
