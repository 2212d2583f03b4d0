"""Jobs outlive their agent: kill -9 or stop the agent, start another on the same spool."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from tests.agent.harness import KEY, FakeController, kill_leftovers, launch_object

ROOT = Path(__file__).resolve().parents[2]


async def start_agent(
    ctl: FakeController, tmp_path: Path, n: int, key: str = KEY
) -> asyncio.subprocess.Process:
    log = open(tmp_path / f"agent{n}.log", "wb")  # noqa: SIM115 -- handed to the child
    key_file = tmp_path / f"key{n}"
    key_file.write_text(key + "\n")
    key_file.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "FSCHED_AGENT_KEY"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent", "--nodes", "node[01-02]", "--controller", ctl.url,
        "--key-file", str(key_file), "--spool", str(tmp_path / "spool"), "--cpus", "4", "--memory", "2048",
        "--allow-root-jobs",  # the jobs run as the test's user, root in CI
        cwd=ROOT, stdout=log, stderr=log, env={**env, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    log.close()
    return proc


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def run(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        async with FakeController() as ctl:
            procs: list[asyncio.subprocess.Process] = []
            try:
                await scenario(ctl, procs)
            finally:
                for p in procs:
                    if p.returncode is None:
                        p.kill()
                        await p.wait()
                kill_leftovers(tmp_path / "spool")

    asyncio.run(main())


def test_kill_9_agent_then_restart_adopts_the_running_job(tmp_path: Path) -> None:
    work = tmp_path

    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        procs.append(await start_agent(ctl, tmp_path, 1))
        first = await ctl.expect("register")
        await ctl.send({"type": "launch", "job": launch_object(40, "#!/bin/bash\nsleep 1.5\nexit 4\n", work)})
        started = await ctl.expect("started", job_id=40)
        procs[0].kill()
        await procs[0].wait()
        procs.append(await start_agent(ctl, tmp_path, 2))
        second = await ctl.expect("register")
        # The same spool: the same agent to the controller, which gives its nodes back at
        # once even if the old connection still looks open on another server process.
        assert second["agent_id"] == first["agent_id"]
        assert second["running"] == [{"job_id": 40, "node": "node01", "pid": started["pid"], "run": 0}]
        # The job's processes survived, so the nodes did not reboot.
        assert second["nodes"][0]["boot_time"] == first["nodes"][0]["boot_time"]
        done = await ctl.expect("completed", job_id=40, timeout=4)
        assert (done["exit_code"], done["signal"]) == (4, 0)
        procs[1].send_signal(signal.SIGTERM)
        assert await procs[1].wait() == 0

    run(tmp_path, scenario)


def test_stopped_agent_leaves_jobs_running_and_registered_kill_kills_them(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        procs.append(await start_agent(ctl, tmp_path, 1))
        await ctl.expect("register")
        await ctl.send({"type": "launch", "job": launch_object(41, "#!/bin/bash\nsleep 30\n", tmp_path)})
        pid = (await ctl.expect("started", job_id=41))["pid"]
        procs[0].send_signal(signal.SIGTERM)
        assert await procs[0].wait() == 0
        assert group_alive(pid)  # like slurmd: jobs survive an agent stop
        ctl.kill_on_register = [41]
        procs.append(await start_agent(ctl, tmp_path, 2))
        reg = await ctl.expect("register")
        assert [r["job_id"] for r in reg["running"]] == [41]
        for _ in range(100):
            if not group_alive(pid):
                break
            await asyncio.sleep(0.02)
        assert not group_alive(pid)
        await ctl.nothing("completed", 0.5)
        assert not (tmp_path / "spool" / "jobs" / "41").exists()
        assert not (tmp_path / "spool" / "done" / "41.json").exists()

    run(tmp_path, scenario)


def test_job_ending_while_agent_is_down_is_reported_with_its_status(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        procs.append(await start_agent(ctl, tmp_path, 1))
        first = await ctl.expect("register")
        await ctl.send(
            {"type": "launch", "job": launch_object(42, "#!/bin/sh\nsleep 0.3\nexit 5\n", tmp_path)}
        )
        pid = (await ctl.expect("started", job_id=42))["pid"]
        procs[0].kill()
        await procs[0].wait()
        for _ in range(100):
            if not group_alive(pid):
                break
            await asyncio.sleep(0.02)
        procs.append(await start_agent(ctl, tmp_path, 2))
        reg = await ctl.expect("register")
        assert reg["running"] == []
        [c] = reg["completions"]
        assert (c["job_id"], c["node"], c["exit_code"], c["signal"]) == (42, "node01", 5, 0)
        # Nothing survived: a restarted agent with no jobs counts as a rebooted node.
        assert reg["nodes"][0]["boot_time"] > first["nodes"][0]["boot_time"]
        await ctl.nothing("completed", 0.3)  # it was in register; nothing else to send

    run(tmp_path, scenario)


def test_command_line_agent_with_a_wrong_key_exits_2(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        procs.append(await start_agent(ctl, tmp_path, 1, key="wrong"))
        assert await asyncio.wait_for(procs[0].wait(), 10) == 2
        log = (tmp_path / "agent1.log").read_text()
        assert "ERROR agent.daemon: controller failed to prove the cluster key (wrong proof)" in log
        assert ctl.registers == []

    run(tmp_path, scenario)


def test_key_is_never_on_the_command_line(tmp_path: Path) -> None:
    """``--key`` is gone (argv shows in ps); the key comes from a private file or the environment."""

    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        procs.append(await start_agent(ctl, tmp_path, 1))
        await ctl.expect("register")
        cmdline = (Path("/proc") / str(procs[0].pid) / "cmdline").read_bytes().split(b"\0")
        assert KEY.encode() not in cmdline and b"--key" not in cmdline

    run(tmp_path, scenario)
