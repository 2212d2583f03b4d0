"""salloc and the job credential end to end (#16 point 2): a real controller, the real
agent and CLI.  salloc runs its command with the allocation's variables and the job ends
COMPLETED (or FAILED with the command's exit code) with no ``batch`` step; a salloc
killed with -9 loses its allocation after InactiveLimit; Ctrl-C while pending revokes the
request; a batch job's script queries its own job with the credential its agent handed
it, and with nothing else.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import DEMO_CONF, FSCHED, E2ECluster, make_cluster, started

pytestmark = pytest.mark.e2e

INACTIVE_LIMIT = 5  # seconds: how long a silent salloc keeps its allocation here


@pytest.fixture(scope="module")
def c(tmp_path_factory) -> Iterator[E2ECluster]:
    conf = tmp_path_factory.mktemp("salloc-conf") / "conf"
    shutil.copytree(DEMO_CONF, conf)
    with open(conf / "slurm.conf", "a") as f:
        f.write(f"InactiveLimit={INACTIVE_LIMIT}\n")
        # salloc with no command runs its interactive step (no test here runs a local shell).
        f.write("LaunchParameters=use_interactive_step\n")
    with started(make_cluster(tmp_path_factory, "embedded", conf_dir=conf)) as cluster:
        yield cluster


def state_of(c: E2ECluster, job_id: int) -> str:
    return c.jobs(job_id)[job_id]["state"]


def granted_id(stderr: str) -> int:
    return int(re.search(r"Granted job allocation (\d+)", stderr).group(1))


def salloc(c: E2ECluster, *args: str) -> subprocess.Popen[str]:
    """salloc in a session of its own (its command is in its process group)."""
    return subprocess.Popen(
        [FSCHED, "salloc", *args],
        env=c.env,
        cwd=c.state_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def read_stderr_until(proc: subprocess.Popen[str], words: str) -> str:
    seen = ""
    while words not in seen:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"salloc ended before {words!r}: {seen}")
        seen += line
    return seen


def test_salloc_runs_its_command_in_the_allocation_and_releases_it(c: E2ECluster) -> None:
    done = c.cli("salloc", "-N1", "sh", "-c", 'echo "$SLURM_JOB_ID $SLURM_JOB_NODELIST $SLURM_NNODES"')
    job_id = granted_id(done.stderr)
    job_id_text, node, nnodes = done.stdout.split()
    assert int(job_id_text) == job_id and nnodes == "1"
    assert re.fullmatch(r"node\d+", node)
    assert done.stderr.splitlines()[0] == f"salloc: Pending job allocation {job_id}"
    assert done.stderr.splitlines()[-1] == f"salloc: Relinquishing job allocation {job_id}"
    c.wait_for("the allocation to end", lambda: state_of(c, job_id) == "COMPLETED", timeout=30)
    # No script, so no batch step: sacct shows the job line alone.
    lines = c.cli("sacct", "-j", str(job_id), "-n", "-P", "-o", "JobID,JobName,State,ExitCode").stdout.split()
    assert lines == [f"{job_id}|sh|COMPLETED|0:0"]


def test_salloc_exits_with_its_commands_status_and_the_job_records_it(c: E2ECluster) -> None:
    done = c.cli("salloc", "-N1", "-J", "failing", "sh", "-c", "exit 3", check=False)
    assert done.returncode == 3
    job_id = granted_id(done.stderr)
    c.wait_for("the allocation to end", lambda: state_of(c, job_id) == "FAILED", timeout=30)
    out = c.cli("sacct", "-j", str(job_id), "-n", "-P", "-o", "JobID,JobName,State,ExitCode").stdout.split()
    assert out == [f"{job_id}|failing|FAILED|3:0"]


def test_srun_outside_an_allocation_makes_the_job_and_runs_the_step(c: E2ECluster) -> None:
    """#16's acceptance: ``srun -N2 -n2 env`` from a terminal outside any allocation prints
    each task's SLURM_PROCID and SLURM_STEP_ID; the job it made ends with its step."""
    done = c.cli("srun", "-N2", "-n2", "-l", "env")
    tasks: dict[str, dict[str, str]] = {}
    for line in done.stdout.splitlines():
        label, _, rest = line.partition(": ")
        name, _, value = rest.partition("=")
        tasks.setdefault(label.strip(), {})[name] = value
    assert sorted(tasks) == ["0", "1"], done.stdout[:2000]
    assert [tasks[t]["SLURM_PROCID"] for t in ("0", "1")] == ["0", "1"]
    assert {tasks[t]["SLURM_STEP_ID"] for t in ("0", "1")} == {"0"}
    assert len({tasks[t]["SLURMD_NODENAME"] for t in ("0", "1")}) == 2  # one task per node
    # srun says nothing of an allocation it got at once (Slurm's srun keeps those lines for -v).
    assert "allocation" not in done.stderr, done.stderr
    job_id = int(tasks["0"]["SLURM_JOB_ID"])
    assert tasks["1"]["SLURM_JOB_ID"] == str(job_id)
    c.wait_for("srun's job to end", lambda: state_of(c, job_id) == "COMPLETED", timeout=30)
    rows = c.cli("sacct", "-j", str(job_id), "-n", "-P", "-o", "JobID,JobName,State,ExitCode").stdout.split()
    # The job srun made is named after the program it ran, as Slurm's srun names it.
    assert rows == [f"{job_id}|env|COMPLETED|0:0", f"{job_id}.0|env|COMPLETED|0:0"]

    failed = c.cli("srun", "-n1", "sh", "-c", 'echo "$SLURM_JOB_ID"; exit 5', check=False)
    assert failed.returncode == 5
    job_id = int(failed.stdout.split()[0])
    c.wait_for("srun's job to end", lambda: state_of(c, job_id) == "FAILED", timeout=30)


def test_salloc_runs_srun_in_its_allocation(c: E2ECluster) -> None:
    """#16's acceptance: ``salloc -N1 fsched srun hostname`` works."""
    done = c.cli("salloc", "-N1", FSCHED, "srun", "hostname")
    host = subprocess.run(["hostname"], capture_output=True, text=True, check=True).stdout.strip()
    assert done.stdout.splitlines() == [host]
    job_id = granted_id(done.stderr)
    c.wait_for("the allocation to end", lambda: state_of(c, job_id) == "COMPLETED", timeout=30)
    rows = c.cli("sacct", "-j", str(job_id), "-n", "-P", "-o", "JobID,JobName,State").stdout.split()
    assert rows == [f"{job_id}|fsched|COMPLETED", f"{job_id}.0|hostname|COMPLETED"]


def test_a_killed_salloc_loses_its_allocation_after_inactive_limit(c: E2ECluster) -> None:
    proc = salloc(c, "-N1", "sleep", "300")
    try:
        job_id = granted_id(read_stderr_until(proc, "Granted job allocation"))
        assert state_of(c, job_id) == "RUNNING"
        os.kill(proc.pid, signal.SIGKILL)  # the holder only: its command lives on
        proc.wait()
        c.wait_for(
            "the silent holder's allocation to end", lambda: state_of(c, job_id) == "TIMEOUT", timeout=60
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its orphaned command
        proc.communicate()


def test_ctrl_c_while_pending_revokes_the_request(c: E2ECluster) -> None:
    proc = salloc(c, "-N1", "--hold", "true")
    seen = read_stderr_until(proc, "queued and waiting for resources")
    job_id = int(re.search(r"Pending job allocation (\d+)", seen).group(1))
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert err.splitlines()[-1] == f"salloc: Job allocation {job_id} has been revoked."
    assert state_of(c, job_id) == "CANCELLED"


SCRIPT = """#!/bin/bash
unset FSCHED_CLI_CONFIG FSCHED_TOKEN
export HOME=$(mktemp -d) XDG_CONFIG_HOME=$HOME
env | grep -c '^FSCHED_TOKEN=' ; echo "url=${{FSCHED_URL:+set}}"
{fsched} squeue -h -j $SLURM_JOB_ID -o "%i %T"
{fsched} scontrol show job $SLURM_JOB_ID | head -1
{fsched} squeue -h -j {other} -o %i; echo "other=$?"
sleep 8
"""


def _processes_of(job_id: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                environ = Path(entry.path, "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"SLURM_JOB_ID={job_id}".encode() in environ:
                pids.append(int(entry.name))
    return pids


def _credential_of(pid: int) -> str:
    for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if item.startswith(b"FSCHED_JOB_CREDENTIAL="):
            return item.split(b"=", 1)[1].decode()
    return ""


def test_a_batch_job_queries_its_own_job_with_its_credential_only(c: E2ECluster, tmp_path: Path) -> None:
    other = int(c.cli("sbatch", "--parsable", "--hold", "--wrap", "true").stdout.strip())
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT.format(fsched=FSCHED, other=other))
    job_id = int(c.cli("sbatch", "--parsable", "-o", str(tmp_path / "out"), str(script)).stdout.strip())
    pids = c.wait_for("the job's processes", lambda: _processes_of(job_id), timeout=30)
    credential = c.wait_for("the credential", lambda: next(filter(None, map(_credential_of, pids)), ""))
    assert credential.startswith(f"{job_id}.")
    # Never on a command line, never in a file another user could read.
    ps = subprocess.run(["ps", "-eww", "-o", "args"], check=True, capture_output=True, text=True)
    assert credential not in ps.stdout
    # Nor in any file of the controller's and the agent's state (their database keeps its
    # digest only, their logs never print it), whoever may read them.
    for path in [*Path(c.state_dir).rglob("*"), *tmp_path.rglob("*")]:
        if path.is_file() and not path.is_symlink():
            assert credential.encode() not in path.read_bytes(), path
    c.wait_for("the job to end", lambda: state_of(c, job_id) == "COMPLETED", timeout=60)
    lines = (tmp_path / "out").read_text().splitlines()
    assert lines[:4] == ["0", "url=set", f"{job_id} RUNNING", f"JobId={job_id} JobName=job.sh"]
    assert "acts on its own job only" in (tmp_path / "out").read_text()
    assert lines[-1] == "other=1"
    # Once the job has ended, the credential is refused.
    alone = {
        "FSCHED_TOKEN": "",
        "FSCHED_CLI_CONFIG": str(tmp_path / "none.json"),
        "FSCHED_JOB_CREDENTIAL": credential,
    }
    after = c.cli("squeue", "-h", "-j", str(job_id), check=False, env=alone)
    assert after.returncode == 1
    assert f"Job credential expired: job {job_id} is not running." in after.stderr
    c.cli("scancel", str(other))


def test_salloc_no_shell_keeps_the_allocation_and_exits(c: E2ECluster) -> None:
    """salloc --no-shell (src/salloc/salloc.c: exit(0) once granted; no port for
    slurmctld to ping, so InactiveLimit does not end it): the job holds its nodes until
    scancel, named no-shell."""
    done = c.cli("salloc", "--no-shell", "-N1", "echo", "never run")
    assert done.stdout == ""
    job_id = granted_id(done.stderr)
    assert done.stderr.splitlines()[0] == f"salloc: Pending job allocation {job_id}"
    assert done.stderr.splitlines()[-1] in (
        f"salloc: Granted job allocation {job_id}",
        f"salloc: Nodes {c.jobs(job_id)[job_id]['node_list']} are ready for job",
    )
    assert "Relinquishing" not in done.stderr
    time.sleep(INACTIVE_LIMIT + 3)  # a lease's length and a health cycle: no holder to miss
    assert state_of(c, job_id) == "RUNNING"
    name = c.cli("squeue", "-h", "-j", str(job_id), "-o", "%j").stdout.strip()
    assert name == "no-shell"
    # Steps run in it, as in any allocation.
    step = c.cli("srun", f"--jobid={job_id}", "sh", "-c", 'echo "$SLURM_JOB_ID"')
    assert step.stdout.strip() == str(job_id)
    # No holder to tell: scontrol notify says so, as slurmctld does for such a job.
    told = c.cli("scontrol", "notify", str(job_id), "hello", check=False)
    disabled = "job notify failure: Requested operation is presently disabled\n"
    assert (told.returncode, told.stderr) == (1, disabled)
    c.cli("scancel", str(job_id))
    c.wait_for("the allocation to end", lambda: state_of(c, job_id) == "CANCELLED", timeout=30)


def test_scontrol_notify_reaches_salloc_and_a_batch_job_s_stderr(c: E2ECluster) -> None:
    proc = salloc(c, "-N1", "sleep", "30")
    try:
        job_id = granted_id(read_stderr_until(proc, "Granted job allocation"))
        c.cli("scontrol", "notify", str(job_id), "save", "your", "work")
        read_stderr_until(proc, "salloc: save your work")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    out = Path(c.state_dir) / "notified.out"
    submitted = c.cli("sbatch", "--parsable", "-o", str(out), "--wrap", "sleep 4; echo done")
    batch_id = int(submitted.stdout.strip())
    c.wait_for("the batch job to run", lambda: state_of(c, batch_id) == "RUNNING", timeout=30)
    time.sleep(0.5)  # its script started on the agent
    c.cli("scontrol", "notify", str(batch_id), "checkpoint", "now")
    c.wait_for("the batch job to end", lambda: state_of(c, batch_id) == "COMPLETED", timeout=30)
    assert out.read_text() == "slurmstepd: error: checkpoint now\ndone\n"


def test_use_interactive_step_runs_the_shell_on_the_first_node_as_the_interactive_step(c: E2ECluster) -> None:
    """LaunchParameters=use_interactive_step: salloc with no command runs srun's interactive
    step, $SHELL on the allocation's first node, whose status is salloc's. It is
    ``N.interactive`` (SLURM_INTERACTIVE_STEP, its SLURM_STEP_ID), and takes no step
    number: the shell's first srun step is ``N.0``."""
    script = (
        'echo "on=$SLURMD_NODENAME step=$SLURM_STEP_ID tasks=$SLURM_STEP_NUM_TASKS"\n'
        "srun -n1 sh -c 'echo inner=$SLURM_STEP_ID'\n"
        'squeue -s -h -j "$SLURM_JOB_ID" -o %i\n'
        'scontrol show step "$SLURM_JOB_ID.interactive" | head -n1\n'
        "exit 7\n"
    )
    done = c.cli("salloc", "-N2", input=script, env={**c.env, "SHELL": "/bin/sh"}, check=False)
    assert done.returncode == 7, done.stderr
    job_id = granted_id(done.stderr)
    # Not a terminal here: srun says so and runs the shell all the same.
    assert "srun: error: Not using a pseudo-terminal, disregarding --pty option" in done.stderr
    c.wait_for("the allocation to end", lambda: state_of(c, job_id) in ("COMPLETED", "FAILED"), timeout=30)
    nodes = c.cli("scontrol", "show", "hostnames", c.jobs(job_id)[job_id]["node_list"]).stdout.split()
    assert len(nodes) == 2
    lines = done.stdout.splitlines()
    assert lines[:3] == [f"on={nodes[0]} step=4294967290 tasks=1", "inner=0", f"{job_id}.interactive"], lines
    assert lines[3].startswith(f"StepId={job_id}.interactive "), lines
    rows = c.cli(
        "sacct", "-j", str(job_id), "-n", "-P", "-o", "JobID,JobName,NodeList,ExitCode"
    ).stdout.split()
    assert rows[1:3] == [f"{job_id}.interactive|interactive|{nodes[0]}|7:0", f"{job_id}.0|sh|{nodes[0]}|0:0"]


def test_the_interactive_step_s_shell_is_on_a_terminal_when_salloc_is(c: E2ECluster) -> None:
    """The default InteractiveStepOptions' --pty: salloc on a terminal gives the shell on the
    node a terminal of its own (its controlling one), srun's terminal raw meanwhile."""
    master, slave = pty.openpty()
    env = {**c.env, "SHELL": "/bin/sh", "PS1": ""}
    proc = subprocess.Popen(
        [FSCHED, "salloc", "-N1"], env=env, cwd=c.state_dir, stdin=slave, stdout=slave, stderr=slave,
        start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    os.write(master, b'test -t 0 && test -t 1 && echo "tty=yes on=$SLURMD_NODENAME"; exit 5\n')
    seen = b""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([master], [], [], 0.5)[0]:
            with contextlib.suppress(OSError):  # the terminal's other side closed
                seen += os.read(master, 4096)
    os.close(master)
    assert proc.wait(timeout=10) == 5, seen
    text = seen.decode(errors="replace")
    assert "Not using a pseudo-terminal" not in text
    assert re.search(r"tty=yes on=node\d+", text), text
