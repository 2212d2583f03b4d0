"""The spool is private and locked; bad launches fail cleanly; a lost spool drains (issue 10)."""

from __future__ import annotations

import asyncio
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import agent.jobs
from agent.daemon import Agent
from agent.jobs import BASH, WRAPPER, WRAPPER_NAME
from agent.spool import Completion, JobState, Spool, SpoolLocked
from tests.agent.harness import FakeController, agent_config, kill_leftovers, launch_object, run_with_agent

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


def test_spool_is_private_whatever_the_umask(tmp_path: Path) -> None:
    old = tmp_path / "old"
    (old / "done").mkdir(parents=True)
    old.chmod(0o755)
    (old / "done" / "5.json").write_text('{"job_id": 5, "node": "n", "exit_code": 0, "signal": 0, '
                                         '"end_time": 1.0, "seq": 1}')  # fmt: skip
    (old / "done" / "5.json").chmod(0o644)
    umask = os.umask(0)
    try:
        spool = Spool(old)
        spool.lock()
        spool.write_state(JobState(1, "n1", 0, 0, 0.0, 0, 0, "/x", launch="l"))
        spool.write_completions([Completion(2, "n1", 0, 0, 1.0, 1)])
        spool.write_boot_time(1.0)
        os.close(spool.prepare_job(3, "#!/bin/sh\n", None))
    finally:
        os.umask(umask)
        spool.close()
    dirs = [old, old / "jobs", old / "done", old / "state", old / "jobs" / "3"]
    assert {d.name: _mode(d) for d in dirs} == {d.name: 0o700 for d in dirs}
    files = [old / "lock", old / "state" / "1.json", old / "done" / "2.json", old / "done" / "5.json",
             old / "boot_time"]  # fmt: skip
    assert {f.name: _mode(f) for f in files} == {f.name: 0o600 for f in files}
    assert _mode(old / "jobs" / "3" / "script") == 0o700


def test_spool_lock_is_exclusive_and_names_its_holder(tmp_path: Path) -> None:
    first = Spool(tmp_path)
    first.lock()
    busy = f"spool {tmp_path} is in use by another agent (pid {os.getpid()})"
    with pytest.raises(SpoolLocked, match=re.escape(busy)):
        Spool(tmp_path).lock(wait=0.1)
    first.close()
    second = Spool(tmp_path)
    second.lock(wait=0)
    second.close()


def test_spool_lock_waits_for_a_dying_agents_child(tmp_path: Path) -> None:
    """A forked child still holds the dead agent's lock descriptor for an instant."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(tmp_path / 'lock')!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(0.4)\n"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        spool = Spool(tmp_path)
        spool.lock(wait=3)  # would raise SpoolLocked without the wait
        assert (tmp_path / "lock").read_text() == f"{os.getpid()}\n"
        spool.close()
    finally:
        holder.wait()


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("std_out", "out\0put", "invalid output file name: contains a NUL byte"),
        ("std_err", "e\0", "invalid error file name: contains a NUL byte"),
        ("work_dir", "/tmp\0/x", "invalid working directory: contains a NUL byte"),
        ("environment", {"A\0B": "1"}, "invalid environment variable name 'A\\x00B'"),
        ("environment", {"A=B": "1"}, "invalid environment variable name 'A=B'"),
        ("environment", {"A": "x\0y"}, "invalid environment variable A: its value contains a NUL byte"),
        ("environment", ["no", "map"], "cannot start job: AttributeError: 'list' object has no attribute"),
        ("script", "#!/bin/sh\necho \udc80\n", "cannot start job: UnicodeEncodeError"),
        ("num_nodes", {"a": 1}, None),  # str() of anything is accepted: the job runs
    ],
)
def test_malformed_launch_is_a_launch_failure_not_a_running_job(
    tmp_path: Path, work: Path, field: str, value: object, error: str | None
) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(60, "#!/bin/sh\n", work)
        job[field] = value
        await ctl.send({"type": "launch", "job": job})
        if error is None:
            await ctl.expect("completed", job_id=60)
            return
        failed = await ctl.expect("launch_failed", job_id=60)
        assert failed["error"].startswith(error)
        assert (failed["node"], failed["run"]) == ("node01", 0)
        assert agent.jobs.running() == []
        assert not (tmp_path / "spool" / "jobs" / "60").exists()
        assert list((tmp_path / "spool" / "state").iterdir()) == []

    run_with_agent(tmp_path, scenario)


def test_launch_with_a_bad_field_fails_one_without_a_job_id_is_dropped(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object("x", "#!/bin/sh\n", work)})
        await ctl.send({"type": "launch", "job": ["no", "object"]})
        await ctl.send({"type": "launch", "job": launch_object(66, "#!/bin/sh\n", work, run="abc")})
        failed = await ctl.expect("launch_failed", job_id=66)  # a job id is enough to answer
        assert failed["error"].startswith("cannot start job: ValueError: invalid literal for int()")
        await ctl.send({"type": "launch", "job": launch_object(61, "#!/bin/sh\n", work)})
        await ctl.expect("completed", job_id=61)
        await ctl.nothing("launch_failed", 0.2)  # nothing to answer for the first two

    run_with_agent(tmp_path, scenario)


def test_failed_launch_leaves_the_output_file_as_it_was(tmp_path: Path, work: Path) -> None:
    out = work / "kept.out"
    out.write_text("results of an earlier run\n")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(62, "#!/bin/sh\necho new\n", work, std_out="kept.out", std_in="missing.in")
        await ctl.send({"type": "launch", "job": job})
        failed = await ctl.expect("launch_failed", job_id=62)
        missing = work / "missing.in"
        assert failed["error"] == f"could not open stdin file {missing}: No such file or directory"
        assert out.read_text() == "results of an earlier run\n"
        (work / "missing.in").write_text("")
        await ctl.send({"type": "launch", "job": job})
        await ctl.expect("completed", job_id=62)
        assert out.read_text() == "new\n"  # a launch that goes ahead truncates it

    run_with_agent(tmp_path, scenario)


def _run_wrapper(tmp_path: Path, work_dir: str, **ids: object) -> subprocess.CompletedProcess[bytes]:
    job_dir = tmp_path / "job"
    job_dir.mkdir(mode=0o700, exist_ok=True)
    (job_dir / "script").write_text("#!/bin/sh\npwd\n")
    (job_dir / "script").chmod(0o700)
    if ids:
        for p in (job_dir, job_dir / "script"):
            os.chown(p, ids["user"], ids["group"])  # type: ignore[arg-type]
    fd = os.open(job_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return subprocess.run(
            [BASH, "-c", WRAPPER, WRAPPER_NAME, f"/proc/self/fd/{fd}", work_dir, "launch=1.0.x"],
            capture_output=True, pass_fds=(fd,), cwd="/", check=False, **ids,  # type: ignore[arg-type]
        )  # fmt: skip
    finally:
        os.close(fd)


def test_wrapper_that_cannot_chdir_goes_to_tmp_as_slurmstepd_does(tmp_path: Path) -> None:
    done = _run_wrapper(tmp_path, str(tmp_path / "gone"))
    assert done.returncode == 0
    assert done.stdout == b"/tmp\n"
    assert (
        done.stderr
        == (
            f"slurmstepd: error: couldn't chdir to `{tmp_path / 'gone'}': No such file or directory: "
            "going to /tmp instead\n"
        ).encode()
    )
    assert (tmp_path / "job" / "status").read_text() == "0\n"
    assert int((tmp_path / "job" / "pid").read_text()) > 0


def test_wrapper_appends_its_pid_and_status_to_the_files_the_agent_emptied(tmp_path: Path) -> None:
    """Never ``O_TRUNC``: on ext4 a truncated file's close writes its data at once
    (auto_da_alloc), a millisecond of wall time or more per file and job. The files are
    new or emptied by the agent (a kept directory), so an append writes the same bytes;
    here each holds a mark first, which a truncating write would have removed."""
    job_dir = tmp_path / "job"
    job_dir.mkdir(mode=0o700)
    for name in ("pid", "status"):
        (job_dir / name).write_text("mark\n")
    done = _run_wrapper(tmp_path, str(tmp_path))
    assert done.returncode == 0
    pid = (job_dir / "pid").read_text()
    assert pid.startswith("mark\n") and int(pid.split("\n")[1]) > 0
    assert (job_dir / "status").read_text() == "mark\n0\n"


@as_root
def test_wrapper_changes_directory_as_the_jobs_user_not_as_root(tmp_path: Path) -> None:
    """A directory only root may enter: the chdir fails, because it happens after setuid."""
    nobody = pwd.getpwnam("nobody")
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    tmp_path.chmod(0o755)
    done = _run_wrapper(tmp_path, str(private), user=nobody.pw_uid, group=nobody.pw_gid)
    assert done.stdout == b"/tmp\n"
    assert b"couldn't chdir to" in done.stderr and b"Permission denied" in done.stderr


@as_root
def test_job_of_another_user_runs_from_a_spool_it_cannot_read(tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    work = Path("/tmp") / f"fsched-w3-work-{os.getpid()}"
    work.mkdir(mode=0o777)
    work.chmod(0o777)
    spool = tmp_path / "spool"
    script = f"#!/bin/sh\nid -u\nls {spool} 2>/dev/null || echo denied\nsleep 5\n"
    try:

        async def scenario(ctl: FakeController, agent: Agent) -> None:
            await ctl.send({"type": "launch", "job": launch_object(63, script, work, user="nobody")})
            await ctl.expect("started", job_id=63)
            for _ in range(100):
                if (work / "slurm-63.out").read_text().count("\n") >= 2:
                    break
                await asyncio.sleep(0.02)
            assert _mode(spool) == 0o700 and spool.stat().st_uid == 0
            assert (spool / "jobs" / "63").stat().st_uid == nobody.pw_uid
            await ctl.send({"type": "cancel", "job_id": 63, "kill_wait": 5})
            done = await ctl.expect("completed", job_id=63)
            assert (done["exit_code"], done["signal"]) == (0, 15)  # the script got the TERM

        run_with_agent(tmp_path, scenario)
        assert (work / "slurm-63.out").read_text() == f"{nobody.pw_uid}\ndenied\n"
    finally:
        shutil.rmtree(work)


def test_lost_spool_drains_refuses_launches_and_loses_no_completion(
    tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent.jobs, "SPOOL_RECHECK", 0.1)
    spool = tmp_path / "spool"
    script = "#!/bin/sh\necho run >> marker\nsleep 0.5\nexit 4\n"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(64, script, work)})
        await ctl.expect("started", job_id=64)
        for _ in range(100):  # the script has started: the spool goes while it runs
            if (work / "marker").exists():
                break
            await asyncio.sleep(0.01)
        shutil.rmtree(spool)
        done = await ctl.expect("completed", job_id=64)
        assert (done["exit_code"], done["signal"]) == (4, 0)  # from the wrapper: no status file
        drain = await ctl.expect("drain")
        assert drain == {"type": "drain", "nodes": ["node01", "node02"],
                         "reason": "spool unusable: No such file or directory"}  # fmt: skip
        await ctl.send({"type": "launch", "job": launch_object(65, script, work)})
        failed = await ctl.expect("launch_failed", job_id=65)
        assert failed["error"] == "agent cannot launch jobs: spool unusable: No such file or directory"
        assert [c["job_id"] for c in agent.jobs.completions()] == [64]  # kept in memory
        await ctl.nothing("drain", 0.3)  # once
        spool.mkdir()  # the administrator restores it
        for _ in range(50):
            if agent.jobs.problem is None:
                break
            await asyncio.sleep(0.05)
        assert agent.jobs.problem is None
        assert (spool / "done" / "64.json").exists()  # the kept completion, spooled again

    run_with_agent(tmp_path, scenario)

    async def restart() -> None:
        async with FakeController() as ctl:
            again = Agent(agent_config(ctl.url, spool))
            task = asyncio.create_task(again.run())
            try:
                reg = await ctl.expect("register")
                assert reg["running"] == []
                assert [(c["job_id"], c["exit_code"]) for c in reg["completions"]] == [(64, 4)]
                await asyncio.sleep(0.3)
            finally:
                again.stop()
                assert await asyncio.wait_for(task, 5) == 0
                kill_leftovers(spool)

    asyncio.run(restart())
    assert (work / "marker").read_text() == "run\n"  # ran once, not again after the restart
