"""The agent against a real websocket server playing the controller."""

from __future__ import annotations

import asyncio
import os
import pwd
import socket
import time
from pathlib import Path

import psutil
import pytest

from agent.daemon import REFUSED, Agent
from agent.jobs import start_ticks
from agent.nodeconf import NodeRules
from tests.agent.harness import ME, NODES, FakeController, agent_config, launch_object, run_with_agent


def test_register_announces_nodes_running_and_completions(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        reg = ctl.registers[0]
        # The host and the spool's id (kept in the spool, so a restart keeps it).
        spool_id = (Path(agent.config.spool_dir) / "agent_id").read_text().strip()
        assert reg["agent_id"] == f"{socket.gethostname()}:{spool_id}" and len(spool_id) == 12
        assert [n["name"] for n in reg["nodes"]] == list(NODES)
        node = reg["nodes"][0]
        assert node["cpus"] == 4
        assert node["real_memory"] == 2048
        assert node["features"] == "a,b"
        assert node["conf"] == "HRES=[]"
        assert abs(node["boot_time"] - time.time()) < 30  # the agent's start, by default
        assert reg["running"] == []
        assert reg["completions"] == []

    run_with_agent(tmp_path, scenario)


def test_job_runs_with_slurm_environment_and_output(tmp_path: Path, work: Path) -> None:
    script = (
        "#!/bin/bash\necho out $SLURM_JOB_ID $SLURM_JOB_NAME $SLURMD_NODENAME $FROM_SUBMITTER\nenv\npwd\n"
    )

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(7, script, work)})
        started = await ctl.expect("started", job_id=7)
        assert started["node"] == "node01"
        assert started["pid"] > 0
        done = await ctl.expect("completed", job_id=7)
        assert (done["exit_code"], done["signal"], done["node"]) == (0, 0, "node01")
        assert done["seq"] >= 1
        text = (work / "slurm-7.out").read_text()
        lines = text.splitlines()
        assert lines[0] == "out 7 job7 node01 yes"
        env = dict(line.split("=", 1) for line in lines[1:-1] if "=" in line)
        assert env["SLURM_JOBID"] == "7"
        assert env["SLURM_JOB_NODELIST"] == env["SLURM_NODELIST"] == "node[01-02]"
        assert env["SLURM_JOB_NUM_NODES"] == env["SLURM_NNODES"] == "2"
        assert env["SLURM_CPUS_ON_NODE"] == "4"
        assert env["SLURM_SUBMIT_DIR"] == str(work)
        assert env["SLURM_JOB_PARTITION"] == "debug"
        assert env["SLURM_JOB_ACCOUNT"] == "physics"
        assert env["SLURM_JOB_QOS"] == "normal"
        assert env["SLURM_JOB_USER"] == ME
        assert "SLURM_ARRAY_TASK_ID" not in env
        assert lines[-1] == str(work)  # cwd is the work dir
        # Spooled until acknowledged, then gone.
        spool = tmp_path / "spool"
        assert (spool / "done" / "7.json").exists()
        assert (spool / "jobs" / "7" / "script").exists()
        await ctl.send({"type": "ack", "job_ids": [7]})
        for _ in range(50):
            if not (spool / "done" / "7.json").exists() and not (spool / "jobs" / "7").exists():
                break
            await asyncio.sleep(0.02)
        assert not (spool / "done" / "7.json").exists()
        assert not (spool / "jobs" / "7").exists()

    run_with_agent(tmp_path, scenario)


def test_exit_codes_and_separate_error_file(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(1, "#!/bin/sh\ntrue\n", work)})
        await ctl.send(
            {
                "type": "launch",
                "job": launch_object(
                    2,
                    "#!/bin/sh\necho to-out\necho to-err >&2\nexit 3\n",
                    work,
                    std_out="logs/%x-%j.o",
                    std_err="logs/%x-%j.e",
                    name="named",
                ),
            }
        )
        one = await ctl.expect("completed", job_id=1)
        assert (one["exit_code"], one["signal"]) == (0, 0)
        two = await ctl.expect("completed", job_id=2)
        assert (two["exit_code"], two["signal"]) == (3, 0)
        assert (work / "logs" / "named-2.o").read_text() == "to-out\n"
        assert (work / "logs" / "named-2.e").read_text() == "to-err\n"

    (work / "logs").mkdir()
    run_with_agent(tmp_path, scenario)


def test_processes_left_behind_by_the_script_are_killed(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        script = "#!/bin/bash\nsleep 30 &\necho $! > bgpid\n"
        await ctl.send({"type": "launch", "job": launch_object(13, script, work)})
        done = await ctl.expect("completed", job_id=13)
        assert (done["exit_code"], done["signal"]) == (0, 0)
        leftover = int((work / "bgpid").read_text())
        for _ in range(50):
            if start_ticks(leftover) is None:
                break
            await asyncio.sleep(0.02)
        assert start_ticks(leftover) is None

    run_with_agent(tmp_path, scenario)


def test_array_task_output_name_and_variables(tmp_path: Path, work: Path) -> None:
    script = "#!/bin/sh\necho $SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID\n"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(12, script, work, array_job_id=10, array_task_id=2)
        await ctl.send({"type": "launch", "job": job})
        await ctl.expect("completed", job_id=12)
        assert (work / "slurm-10_2.out").read_text() == "10 2\n"

    run_with_agent(tmp_path, scenario)


def test_cancel_terms_the_job_and_records_the_signal(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(3, "#!/bin/bash\nsleep 30\n", work)})
        await ctl.expect("started", job_id=3)
        t0 = time.monotonic()
        await ctl.send({"type": "cancel", "job_id": 3, "kill_wait": 10})
        done = await ctl.expect("completed", job_id=3)
        assert (done["exit_code"], done["signal"]) == (0, 15)
        assert time.monotonic() - t0 < 3
        assert (work / "slurm-3.out").read_text() == ""  # no shell "Terminated" notice

    run_with_agent(tmp_path, scenario)


def test_cancel_right_after_launch_is_not_lost(tmp_path: Path, work: Path) -> None:
    """A TERM sent while the wrapper is still starting the script must reach the script."""
    ids = range(50, 62)

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        for job_id in ids:
            await ctl.send({"type": "launch", "job": launch_object(job_id, "#!/bin/bash\nsleep 30\n", work)})
            await ctl.send({"type": "cancel", "job_id": job_id, "kill_wait": 20})
        for job_id in ids:
            done = await ctl.expect("completed", job_id=job_id, timeout=3)
            assert (done["exit_code"], done["signal"]) == (0, 15)

    run_with_agent(tmp_path, scenario)


def test_signal_right_after_launch_is_not_lost(tmp_path: Path, work: Path) -> None:
    ids = range(70, 90)

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        for job_id in ids:
            await ctl.send({"type": "launch", "job": launch_object(job_id, "#!/bin/bash\nsleep 30\n", work)})
            await ctl.send({"type": "signal", "job_id": job_id, "signal": "USR1"})
        for job_id in ids:
            done = await ctl.expect("completed", job_id=job_id, timeout=3)
            assert (done["exit_code"], done["signal"]) == (0, 10)

    run_with_agent(tmp_path, scenario)


def test_cancel_kills_after_kill_wait(tmp_path: Path, work: Path) -> None:
    script = "#!/bin/bash\ntrap 'echo ignoring TERM' TERM\nwhile :; do sleep 0.1; done\n"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(4, script, work)})
        await ctl.expect("started", job_id=4)
        await asyncio.sleep(0.2)  # let bash install its trap
        await ctl.send({"type": "cancel", "job_id": 4, "kill_wait": 0.5})
        done = await ctl.expect("completed", job_id=4)
        assert (done["exit_code"], done["signal"]) == (0, 9)
        assert "ignoring TERM" in (work / "slurm-4.out").read_text()

    run_with_agent(tmp_path, scenario)


def test_stop_and_cont_reach_the_whole_process_group(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(5, "#!/bin/bash\nsleep 1\nexit 0\n", work)})
        started = await ctl.expect("started", job_id=5)
        await asyncio.sleep(0.2)
        await ctl.send({"type": "signal", "job_id": 5, "signal": "STOP"})
        await asyncio.sleep(0.2)
        group = [p for p in psutil.process_iter(["pid"]) if _pgid(p.pid) == started["pid"]]
        assert len(group) >= 2  # wrapper, script, sleep
        assert all(p.status() == psutil.STATUS_STOPPED for p in group)
        await ctl.nothing("completed", 1.2)  # stopped: sleep 1 cannot finish
        await ctl.send({"type": "signal", "job_id": 5, "signal": "CONT"})
        done = await ctl.expect("completed", job_id=5)
        assert (done["exit_code"], done["signal"]) == (0, 0)

    run_with_agent(tmp_path, scenario)


def test_signal_usr1_reaches_the_script_not_just_the_wrapper(tmp_path: Path, work: Path) -> None:
    script = "#!/bin/bash\ntrap 'echo got usr1; exit 7' USR1\nsleep 5 &\nwait\n"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(6, script, work)})
        await ctl.expect("started", job_id=6)
        await asyncio.sleep(0.3)
        await ctl.send({"type": "signal", "job_id": 6, "signal": "USR1"})
        done = await ctl.expect("completed", job_id=6)
        assert (done["exit_code"], done["signal"]) == (7, 0)
        assert (work / "slurm-6.out").read_text() == "got usr1\n"

    run_with_agent(tmp_path, scenario)


def test_launch_failures_are_reported(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(8, "#!/bin/sh\n", Path("/nonexistent/x"))})
        failed = await ctl.expect("launch_failed", job_id=8)
        assert failed["error"] == "chdir to /nonexistent/x failed: No such file or directory"
        assert failed["node"] == "node01"
        await ctl.send({"type": "launch", "job": launch_object(9, "#!/bin/sh\n", work, batch_host="node99")})
        failed = await ctl.expect("launch_failed", job_id=9)
        assert "node99" in failed["error"]
        if os.geteuid() == 0:
            await ctl.send(
                {"type": "launch", "job": launch_object(10, "#!/bin/sh\n", work, user="no-such-user")}
            )
            failed = await ctl.expect("launch_failed", job_id=10)
            assert failed["error"] == "user no-such-user does not exist on this node"
        assert not (tmp_path / "spool" / "jobs" / "8").exists()

    run_with_agent(tmp_path, scenario)


def test_repeated_launch_is_idempotent(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(11, "#!/bin/sh\nsleep 0.5\necho once >> log\n", work)
        await ctl.send({"type": "launch", "job": job})
        first = await ctl.expect("started", job_id=11)
        await ctl.send({"type": "launch", "job": job})
        again = await ctl.expect("started", job_id=11)
        assert again["pid"] == first["pid"]
        done = await ctl.expect("completed", job_id=11)
        await ctl.send({"type": "launch", "job": job})
        assert await ctl.expect("completed", job_id=11) == done
        assert (work / "log").read_text() == "once\n"

    run_with_agent(tmp_path, scenario)


def test_unacked_completions_are_resent_on_reconnect(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(20, "#!/bin/sh\nexit 2\n", work)})
        done = await ctl.expect("completed", job_id=20)
        await ctl.drop()
        await ctl.expect("register")
        assert ctl.registers[-1]["completions"] == [{k: v for k, v in done.items() if k != "type"}]
        await ctl.send({"type": "ack", "job_ids": [20]})
        await asyncio.sleep(0.1)
        await ctl.drop()
        await ctl.expect("register")
        assert ctl.registers[-1]["completions"] == []
        assert len(ctl.registers) == 3

    run_with_agent(tmp_path, scenario)


def test_wrong_key_exits_2(tmp_path: Path) -> None:
    async def main() -> int:
        async with FakeController() as ctl:
            agent = Agent(agent_config(ctl.url, tmp_path / "spool", key="wrong"))
            return await asyncio.wait_for(agent.run(), 5)

    assert asyncio.run(main()) == REFUSED


def test_unreachable_controller_is_retried_until_stopped(tmp_path: Path) -> None:
    async def main() -> int:
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        agent = Agent(agent_config(f"http://127.0.0.1:{port}", tmp_path / "spool"))
        task = asyncio.create_task(agent.run())
        await asyncio.sleep(0.8)  # several refused attempts
        assert not task.done()
        agent.stop()
        return await asyncio.wait_for(task, 2)

    assert asyncio.run(main()) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_root_agent_runs_jobs_as_their_user(tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    # Both the spool and the work dir must be reachable by the job's user.
    base = Path(os.environ.get("TMPDIR", "/tmp")) / f"fsched-agent-test-{os.getpid()}"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    work = base / "work"
    work.mkdir()
    work.chmod(0o777)
    try:

        async def main() -> None:
            async with FakeController() as ctl:
                agent = Agent(agent_config(ctl.url, base / "spool"))
                task = asyncio.create_task(agent.run())
                await ctl.expect("register")
                script = "#!/bin/sh\nid -u\necho $HOME $USER $LOGNAME\n"
                await ctl.send({"type": "launch", "job": launch_object(30, script, work, user="nobody")})
                done = await ctl.expect("completed", job_id=30)
                agent.stop()
                assert await task == 0
                assert (done["exit_code"], done["signal"]) == (0, 0)

        asyncio.run(main())
        out = work / "slurm-30.out"
        assert out.read_text() == f"{nobody.pw_uid}\n{nobody.pw_dir} nobody nobody\n"
        assert out.stat().st_uid == nobody.pw_uid
    finally:
        import shutil

        shutil.rmtree(base)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_the_run_number_is_echoed_and_a_later_run_replaces_an_earlier_one(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        first = {**launch_object(9, "#!/bin/bash\nsleep 30\n", work), "run": 0}
        await ctl.send({"type": "launch", "job": first})
        assert (await ctl.expect("started", job_id=9))["run"] == 0
        second = {**launch_object(9, "#!/bin/bash\necho second run\n", work), "run": 1}
        await ctl.send({"type": "launch", "job": second})
        assert (await ctl.expect("started", job_id=9, run=1))["run"] == 1
        done = await ctl.expect("completed", job_id=9)
        assert (done["run"], done["exit_code"], done["signal"]) == (1, 0, 0)
        assert (work / "slurm-9.out").read_text() == "second run\n"

    run_with_agent(tmp_path, scenario)


def test_jobs_ending_together_are_reported_in_one_batch(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        pids = []
        for job_id in (21, 22, 23):
            await ctl.send({"type": "launch", "job": launch_object(job_id, "#!/bin/bash\nsleep 30\n", work)})
            pids.append((await ctl.expect("started", job_id=job_id))["pid"])
        for pid in pids:  # the three end at the same moment
            os.killpg(pid, 9)
        for job_id in (21, 22, 23):
            assert (await ctl.expect("completed", job_id=job_id))["signal"] == 9
        assert [len(b["completions"]) for b in ctl.batches] == [3]

    run_with_agent(tmp_path, scenario)


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root agent refuses root jobs")
def test_root_agent_refuses_root_jobs_unless_configured(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(31, f"#!/bin/sh\ntouch {work}/ran\n", work, user="root", run=2)
        await ctl.send({"type": "launch", "job": job})
        failed = await ctl.expect("launch_failed", job_id=31)
        assert (failed["node"], failed["run"]) == ("node01", 2)
        assert failed["error"].startswith("user root is root and root jobs are disabled on this node")
        await ctl.nothing("started", 0.3)
        assert not (work / "ran").exists() and not (tmp_path / "spool" / "jobs" / "31").exists()

    run_with_agent(tmp_path, scenario, rules=NodeRules(root_jobs=False))


def test_a_spool_problem_drains_the_nodes_again_after_each_registration(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.nothing("drain", 0.2)  # healthy: nothing to say
        agent.jobs.problem = "spool /x cannot be written: No space left on device"
        await ctl.drop()
        await ctl.expect("register")
        drain = await ctl.expect("drain")
        assert drain == {"type": "drain", "nodes": list(NODES), "reason": agent.jobs.problem}

    run_with_agent(tmp_path, scenario)


def test_a_node_held_by_another_agent_is_registered_again_later(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        ctl.rejected_on_register = {"node02": "node is served by another agent"}
        await ctl.drop()
        await ctl.expect("register")
        ctl.rejected_on_register = {}
        again = await ctl.expect("register", timeout=3)
        assert [n["name"] for n in again["nodes"]] == list(NODES)
        await ctl.nothing("register", 0.5)  # accepted: no more retries

    run_with_agent(tmp_path, scenario)


def test_the_backoff_grows_again_after_a_connection_that_worked(tmp_path: Path, monkeypatch) -> None:
    """A registered connection starts the backoff afresh once; the refused attempts after
    it back off further each time (it stayed at 0.1 s, hammering a controller that was
    down, in the 10,000-node bench)."""
    from agent import daemon

    attempts: list[int] = []

    async def main() -> None:
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        agent = Agent(agent_config(f"http://127.0.0.1:{port}", tmp_path / "spool"))
        agent._was_registered = True  # as the connection before the controller went left it

        def delay(attempt: int, cap: float, rand=None) -> float:
            attempts.append(attempt)
            if len(attempts) == 4:
                agent.stop()
            return 0.0

        monkeypatch.setattr(daemon, "backoff_delay", delay)
        await asyncio.wait_for(agent.run(), 10)

    asyncio.run(main())
    assert attempts == [0, 1, 2, 3]


def test_notify_writes_slurmstepd_s_line_to_the_job_s_stderr(tmp_path: Path, work: Path) -> None:
    """scontrol notify for a running batch job (slurmstepd's _handle_notify_job logs it as
    an error, on the job's stderr); for a job not here it is dropped."""
    script = "#!/bin/bash\necho before >&2\nsleep 0.6\necho after >&2\n"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(31, script, work, std_err="job31.err")})
        await ctl.expect("started", job_id=31)
        await asyncio.sleep(0.2)
        await ctl.send({"type": "notify", "job_id": 31, "message": "checkpoint soon"})
        await ctl.send({"type": "notify", "job_id": 99, "message": "nobody"})
        done = await ctl.expect("completed", job_id=31)
        assert (done["exit_code"], done["signal"]) == (0, 0)
        assert (work / "job31.err").read_text() == "before\nslurmstepd: error: checkpoint soon\nafter\n"

    run_with_agent(tmp_path, scenario)
