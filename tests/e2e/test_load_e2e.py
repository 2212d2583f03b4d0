"""Load thresholds with a real controller and a real agent, on the spec's own example
(partition-U7KH5, compute1 State=CLOUD, no power programs): the agent that registers
compute1 brings it up; it reads fed /proc files (``--proc-root``), its heartbeat carries
the indices, ``scontrol show node`` shows them with the thresholds in force, and the load
check drains, stops, continues and undrains as the figures cross the thresholds."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
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


class StatFeed:
    """A fed /proc/stat whose cpu counters move on as the kernel's do: every half second
    100 jiffies, all busy or all idle as set.  The agent measures ut between two reads, so
    a file left as it is would read as no CPU time passed (ut 0), busy or not."""

    def __init__(self, proc: Path) -> None:
        self.proc, self.busy, self.idle, self.loaded = proc, 0, 0, False
        self._stop = threading.Event()
        self._write()

    def _write(self) -> None:
        # Written aside and renamed in, so that the agent never reads half a file.
        part = self.proc / "stat.part"
        part.write_text(STAT.format(busy=self.busy, idle=self.idle))
        part.replace(self.proc / "stat")

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            if self.loaded:
                self.busy += 100
            else:
                self.idle += 100
            self._write()

    @contextlib.contextmanager
    def running(self) -> Iterator[StatFeed]:
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()


def job_group(cluster, job_id: int) -> int:
    """The process group of a job's processes: its launcher, whose pid the agent's spool
    keeps, leads it (the agent signals the group)."""
    pid = cluster.state_dir / "agent" / "jobs" / str(job_id) / "pid"
    return int(cluster.wait_for(f"job {job_id}'s pid", lambda: pid.exists() and pid.read_text().strip()))


def group_states(pgid: int) -> list[str]:
    """The state of each process of a group, as the kernel gives it in /proc/PID/stat (the
    field after the parenthesised name, then ppid, pgrp): T when stopped by SIGSTOP."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == pgid:
            found.append(fields[0])
    return found


def test_load_stop_ut_stops_the_lowest_priority_job_and_recovery_continues_it(tmp_path_factory, tmp_path):
    """LoadStopUt with a fed /proc/stat: the utilisation's EMA (tau 15 s, a sample every
    5 s) passes LoadSchedUt=80 at the 5th busy sample and LoadStopUt=90 at the 7th; the
    node is drained, then the lowest-priority job is stopped (its process in state T), the
    last keeps running; idle counters bring ut back under 80 within a sample or two, the
    job is continued and the node undrained.  The explainer says each step."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "slurm.conf").write_text(SLURM_CONF)
    (conf / "partitions.conf").write_text(PARTITIONS)
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "meminfo").write_text(MEMINFO.format(kib=5000 * 1024))  # memory never short here
    stat = StatFeed(proc)
    cluster = make_cluster(tmp_path_factory, "embedded", conf_dir=conf, env={"FSCHED_LOAD_INTERVAL": "1"})
    groups: dict[int, int] = {}
    try:
        with stat.running():
            cluster.start_server()
            cluster.wait_http()
            cluster.start_agent("compute1", "--proc-root", str(proc))
            cluster.wait_for("compute1 up", lambda: idle(cluster))
            ids = [
                int(cluster.cli("sbatch", "--parsable", "--wrap", "sleep 600", cwd=tmp_path).stdout)
                for _ in range(2)
            ]
            cluster.wait_for("both running", lambda: states(cluster, ids) == ["R", "R"])
            groups.update({i: job_group(cluster, i) for i in ids})
            out = cluster.cli("squeue", "-h", "-o", "%i %Q", "-j", ",".join(map(str, ids))).stdout
            priority = {int(i): int(q) for i, q in (line.split() for line in out.splitlines())}

            stat.loaded = True
            cluster.wait_for(
                "the load drain", lambda: "DRAIN" in cluster.nodes()["compute1"]["state"], timeout=90
            )
            reasons = cluster.cli("sinfo", "-R", "-h", "-o", "%E|%u|%N").stdout
            assert reasons.startswith("Load: ut=") and ">LoadSchedUt=80|slurm|compute1" in reasons
            # A job submitted now waits: the explainer names the drain with its figures.
            waiting = int(cluster.cli("sbatch", "--parsable", "--wrap", "sleep 613", cwd=tmp_path).stdout)
            cluster.wait_for("a reason given", lambda: states(cluster, [waiting]) == ["PD"])

            def explained() -> str | None:
                out = cluster.cli("explain", str(waiting)).stdout
                return out if "[node load]" in out else None

            why = cluster.wait_for("the load named", explained)
            assert "compute1: drained by the load check: ut=" in why and "> LoadSchedUt=80 (partition " in why

            cluster.wait_for("one job stopped", lambda: "ST" in states(cluster, ids), timeout=60)
            stopped, kept = sorted(ids, key=lambda i: states(cluster, [i]) != ["ST"])
            assert states(cluster, [kept]) == ["R"]  # the last job left running is never stopped
            # The lowest priority (at equal priority the later started, the later id here).
            assert (priority[stopped], -stopped) < (priority[kept], -kept)
            # Every process of the stopped job (its launcher, shell and sleep) is in state T.
            assert set(group_states(groups[stopped])) == {"T"}
            assert "T" not in group_states(groups[kept])
            detail = cluster.cli("scontrol", "show", "job", str(stopped)).stdout
            assert "JobState=STOPPED" in detail
            why = cluster.cli("explain", str(stopped)).stdout
            assert "STOPPED: compute1: stopped by the load check: ut=" in why and "> LoadStopUt=90" in why

            stat.loaded = False
            cluster.wait_for("the job continued", lambda: states(cluster, ids) == ["R", "R"], timeout=60)
            assert "T" not in group_states(groups[stopped])
            cluster.wait_for(
                "the undrain", lambda: "DRAIN" not in cluster.nodes()["compute1"]["state"], timeout=30
            )
            cluster.wait_for(
                "the waiting job started", lambda: states(cluster, [waiting]) == ["R"], timeout=30
            )
            cluster.cli("scancel", *map(str, [*ids, waiting]))
    finally:
        cluster.stop()
        # A failure leaves its jobs behind the stopped agent, one of them stopped, where
        # no signal but SIGKILL ends it: this test's own process groups, nothing else.
        for pgid in groups.values():
            with contextlib.suppress(OSError):  # gone, as after a pass
                # Still the launcher of this test's job (its work directory is on its command
                # line), not a pid used again since.
                if str(tmp_path).encode() in Path(f"/proc/{pgid}/cmdline").read_bytes():
                    os.killpg(pgid, signal.SIGKILL)
