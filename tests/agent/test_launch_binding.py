"""A job's CPUs are bound on its wrapper after the fork, never on the agent's launching
thread, and the wrapper starts the script only once the agent has bound it (its go pipe):
binding the thread made the agent's one loop wait, at each launch, until the job's CPU ran
it (docs/profile-demo-cluster.md, session 21)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from agent.daemon import Agent
from agent.jobs import BASH, WRAPPER, WRAPPER_NAME
from tests.agent.harness import FakeController, launch_object, run_with_agent

needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity")


def _cpu_list(ids: set[int]) -> str:
    return ",".join(str(i) for i in sorted(ids))


def _parse_cpu_list(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@needs_affinity
def test_the_wrapper_is_bound_and_the_launching_thread_never_is(
    tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[int, set[int]]] = []
    real = os.sched_setaffinity

    def recorded(pid: int, cpus: object) -> None:
        calls.append((pid, set(cpus)))  # type: ignore[call-overload]
        real(pid, cpus)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "sched_setaffinity", recorded)
    out = work / "out"
    script = "#!/bin/sh\ngrep Cpus_allowed_list /proc/self/status\n"
    job = launch_object(41, script, work, std_out=str(out), cpus_on_node=1)
    started: dict = {}

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": job})
        started.update(await ctl.expect("started", job_id=41))
        done = await ctl.expect("completed", job_id=41, timeout=20)
        assert done["exit_code"] == 0

    run_with_agent(tmp_path, scenario)
    # One call, for the wrapper's pid: the agent's thread (pid 0) was never moved.
    assert [pid for pid, _ in calls] == [started["pid"]]
    (bound,) = [cpus for _, cpus in calls]
    assert len(bound) == 1 and bound <= os.sched_getaffinity(0)
    # The script, forked by the wrapper after its go, inherited the wrapper's mask.
    line = out.read_text().strip()
    assert _parse_cpu_list(line.split(":", 1)[1].strip()) == bound


def _job_dir(tmp_path: Path, script: str) -> int:
    job_dir = tmp_path / "job"
    job_dir.mkdir(mode=0o700)
    (job_dir / "script").write_text(script)
    (job_dir / "script").chmod(0o700)
    return os.open(job_dir, os.O_RDONLY | os.O_DIRECTORY)


def test_the_wrapper_starts_the_script_only_at_its_go_and_the_script_never_sees_the_pipe(
    tmp_path: Path,
) -> None:
    go, given = os.pipe()
    fd = _job_dir(
        tmp_path, f"#!/bin/sh\nif [ -e /proc/self/fd/{go} ]; then echo pipe; else echo no pipe; fi\n"
    )
    wrapper = subprocess.Popen(
        [BASH, "-c", WRAPPER, WRAPPER_NAME, f"/proc/self/fd/{fd}", str(tmp_path), str(go), "launch=1.0.x"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(fd, go), start_new_session=True,
    )  # fmt: skip
    os.close(go)
    os.close(fd)
    try:
        # Its pid is written at once; the script waits (a child of the wrapper would show).
        pid_file, deadline = tmp_path / "job" / "pid", time.monotonic() + 10
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline, "the wrapper never wrote its pid"
            time.sleep(0.01)
        time.sleep(0.3)
        assert wrapper.poll() is None
        children = Path(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children").read_text()
        assert children == ""
        assert not (tmp_path / "job" / "status").exists()
    finally:
        os.close(given)  # the go
    stdout, stderr = wrapper.communicate(timeout=20)
    assert wrapper.returncode == 0, stderr
    assert stdout == b"no pipe\n"
    assert (tmp_path / "job" / "status").read_text() == "0\n"
