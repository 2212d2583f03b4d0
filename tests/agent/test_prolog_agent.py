"""Prolog, Epilog, TaskProlog and TaskEpilog run by a real agent (agent/prolog.py), with
real scripts written by the test, against the fake controller of tests/agent/harness.py."""

from __future__ import annotations

import os
from pathlib import Path

from agent.daemon import Agent
from agent.nodeconf import NodeRules
from agent.prolog import HookCall, HookResult, NodeHooks, Stage
from cluster.core.prolog_conf import PrologConfig
from tests.agent.harness import ME, FakeController, launch_object, run_with_agent


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return str(path)


def _rules(**conf: object) -> NodeRules:
    return NodeRules(root_jobs=True, prolog=PrologConfig(**conf), cluster_name="testcluster")  # type: ignore[arg-type]


def _env_file(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_prolog_runs_before_the_job_with_slurms_environment(tmp_path: Path, work: Path) -> None:
    seen = tmp_path / "prolog.env"
    prolog = _script(tmp_path / "prolog", f"env > {seen}\n")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(7, "#!/bin/bash\ntrue\n", work)})
        await ctl.expect("started", job_id=7)
        env = _env_file(seen)
        assert env["SLURM_JOB_ID"] == env["SLURM_JOBID"] == "7"
        assert env["SLURM_JOB_USER"] == ME
        assert env["SLURM_JOB_UID"] == str(os.geteuid())
        assert env["SLURM_JOB_GID"] == str(os.getegid())
        assert env["SLURM_JOB_NODELIST"] == "node[01-02]"
        assert env["SLURM_JOB_PARTITION"] == "debug"
        assert env["SLURM_JOB_ACCOUNT"] == "physics"
        assert env["SLURM_CLUSTER_NAME"] == "testcluster"
        assert env["SLURM_SCRIPT_CONTEXT"] == "prolog_slurmd"
        assert env["SLURMD_NODENAME"] == "node01"
        # Not the submitter's environment, and no search path (Slurm's Prolog and Epilog Guide).
        assert "FROM_SUBMITTER" not in env
        await ctl.expect("completed", job_id=7)

    run_with_agent(tmp_path, scenario, rules=_rules(prolog=(prolog,)))


def test_a_failing_prolog_reports_prolog_failed_and_starts_nothing(tmp_path: Path, work: Path) -> None:
    prolog = _script(tmp_path / "prolog", "exit 1\n")
    ran = work / "ran"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(8, f"#!/bin/bash\ntouch {ran}\n", work, run=2)
        await ctl.send({"type": "launch", "job": job})
        msg = await ctl.expect("prolog_epilog", job_id=8)
        assert (msg["what"], msg["node"], msg["run"]) == ("prolog_failed", "node01", 2)
        assert "exited with status 1" in msg["error"]
        await ctl.nothing("started", 0.5)
        assert not ran.exists()

    run_with_agent(tmp_path, scenario, rules=_rules(prolog=(prolog,)))


def test_a_prolog_past_its_timeout_is_killed_and_fails(tmp_path: Path, work: Path) -> None:
    marker = tmp_path / "prolog.pid"
    prolog = _script(tmp_path / "prolog", f"echo $$ > {marker}\nexec /bin/sleep 60\n")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(9, "#!/bin/bash\ntrue\n", work)})
        msg = await ctl.expect("prolog_epilog", job_id=9, timeout=10)
        assert msg["what"] == "prolog_failed"
        assert "timed out after 1s" in msg["error"]
        pid = int(marker.read_text())
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]

    run_with_agent(tmp_path, scenario, rules=_rules(prolog=(prolog,), prolog_timeout=1))


def test_task_prolog_export_unset_and_print_reach_the_job(tmp_path: Path, work: Path) -> None:
    task_prolog = _script(
        tmp_path / "task_prolog",
        'echo "export FOO=bar baz"\necho "unset FROM_SUBMITTER"\necho "print hello from the task prolog"\n'
        'echo "export =broken"\necho "ignored line"\necho "export CONTEXT=$SLURM_SCRIPT_CONTEXT"\n',
    )
    script = '#!/bin/bash\necho "FOO=$FOO"\necho "SUB=${FROM_SUBMITTER-unset}"\necho "CONTEXT=$CONTEXT"\n'

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(10, script, work)})
        done = await ctl.expect("completed", job_id=10)
        assert done["exit_code"] == 0
        lines = (work / "slurm-10.out").read_text().splitlines()
        assert lines == ["hello from the task prolog", "FOO=bar baz", "SUB=unset", "CONTEXT=prolog_task"]

    run_with_agent(tmp_path, scenario, rules=_rules(task_prolog=(task_prolog,)))


def test_a_failing_task_prolog_fails_the_launch(tmp_path: Path, work: Path) -> None:
    task_prolog = _script(tmp_path / "task_prolog", "exit 3\n")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(11, "#!/bin/bash\ntrue\n", work)})
        msg = await ctl.expect("launch_failed", job_id=11)
        assert msg["error"].startswith("task prolog failed:")
        await ctl.nothing("started", 0.3)

    run_with_agent(tmp_path, scenario, rules=_rules(task_prolog=(task_prolog,)))


def test_epilog_runs_after_the_completion_and_reports_done(tmp_path: Path, work: Path) -> None:
    seen = tmp_path / "epilog.env"
    task_seen = tmp_path / "task_epilog.env"
    epilog = _script(tmp_path / "epilog", f"env > {seen}\n")
    task_epilog = _script(tmp_path / "task_epilog", f"env > {task_seen}\n")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(12, "#!/bin/bash\nexit 3\n", work)})
        await ctl.expect("completed", job_id=12)
        msg = await ctl.expect("prolog_epilog", job_id=12)
        assert (msg["what"], msg["error"]) == ("epilog_done", "")
        env = _env_file(seen)
        assert env["SLURM_SCRIPT_CONTEXT"] == "epilog_slurmd"
        assert env["SLURM_JOB_EXIT_CODE2"] == "3:0"
        assert env["SLURM_JOB_EXIT_CODE"] == str(3 << 8)
        assert env["SLURM_JOB_USER"] == ME
        task_env = _env_file(task_seen)
        assert task_env["SLURM_SCRIPT_CONTEXT"] == "epilog_task"
        assert task_env["FROM_SUBMITTER"] == "yes"  # the task's own environment

    run_with_agent(tmp_path, scenario, rules=_rules(epilog=(epilog,), task_epilog=(task_epilog,)))


def test_a_failing_epilog_reports_epilog_failed(tmp_path: Path, work: Path) -> None:
    epilog = _script(tmp_path / "epilog", "exit 1\n")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(13, "#!/bin/bash\ntrue\n", work)})
        await ctl.expect("completed", job_id=13)
        msg = await ctl.expect("prolog_epilog", job_id=13)
        assert msg["what"] == "epilog_failed"

    run_with_agent(tmp_path, scenario, rules=_rules(epilog=(epilog,)))


def test_hooks_attached_later_run_after_slurm_confs_programs_in_order(tmp_path: Path) -> None:
    import asyncio

    order = tmp_path / "order"
    prolog = _script(tmp_path / "prolog", f"echo script >> {order}\n")
    hooks = NodeHooks(PrologConfig(prolog=(prolog,)))
    calls: list[str] = []

    async def callback(call: HookCall) -> HookResult:
        calls.append(order.read_text())
        return HookResult(status=2, error="refused by the callback")

    async def never(call: HookCall) -> HookResult:
        raise AssertionError("a hook after a failure must not run")

    hooks.add(Stage.PROLOG, callback)
    hooks.add(Stage.PROLOG, never)
    outcome = asyncio.run(hooks.run(Stage.PROLOG, HookCall(Stage.PROLOG, 1, "node01", {})))
    assert calls == ["script\n"]
    assert (outcome.result.ok, outcome.result.error) == (False, "refused by the callback")


def test_run_epilog_runs_the_epilog_of_a_node_without_the_batch_script(tmp_path: Path) -> None:
    seen = tmp_path / "epilog.env"
    epilog = _script(tmp_path / "epilog", f"env > {seen}\n")
    facts = {"user": ME, "node_list": "node[01-02]", "num_nodes": 2, "partition": "debug"}
    message = {"type": "run_epilog", "job_id": 14, "node": "node02", "run": 1, "exit_code": 2, "signal": 0,
               "job": facts}  # fmt: skip

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send(message)
        msg = await ctl.expect("prolog_epilog", job_id=14)
        assert (msg["what"], msg["node"], msg["run"]) == ("epilog_done", "node02", 1)
        env = _env_file(seen)
        assert (env["SLURMD_NODENAME"], env["SLURM_JOB_USER"]) == ("node02", ME)
        assert (env["SLURM_JOB_EXIT_CODE2"], env["SLURM_SCRIPT_CONTEXT"]) == ("2:0", "epilog_slurmd")

    run_with_agent(tmp_path, scenario, rules=_rules(epilog=(epilog,)))


def test_run_epilog_without_an_epilog_is_answered_at_once(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "run_epilog", "job_id": 15, "node": "node02", "run": 0, "exit_code": 0,
                        "signal": 0, "job": {}})  # fmt: skip
        msg = await ctl.expect("prolog_epilog", job_id=15)
        assert msg["what"] == "epilog_done"

    run_with_agent(tmp_path, scenario, rules=_rules())


def test_run_prolog_runs_the_prolog_at_allocation_and_answers_a_repeat_without_running_it(
    tmp_path: Path,
) -> None:
    """PrologFlags=Alloc (#16 point 3): a node other than the batch host runs its Prolog on
    ``run_prolog``; a repeat (the controller resends after a power up or a reconnect) gets
    the same answer, the Prolog not run twice."""
    runs = tmp_path / "prolog.runs"
    prolog = _script(
        tmp_path / "prolog", f'echo "$SLURMD_NODENAME $SLURM_SCRIPT_CONTEXT $SLURM_JOB_NODELIST" >> {runs}\n'
    )
    facts = {"user": ME, "node_list": "node[01-02]", "num_nodes": 2, "partition": "debug"}
    message = {"type": "run_prolog", "job_id": 16, "node": "node02", "run": 0, "job": facts}

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send(message)
        msg = await ctl.expect("prolog_epilog", job_id=16)
        assert (msg["what"], msg["node"], msg["run"]) == ("prolog_done", "node02", 0)
        await ctl.send(message)
        again = await ctl.expect("prolog_epilog", job_id=16)
        assert again["what"] == "prolog_done"
        assert runs.read_text() == "node02 prolog_slurmd node[01-02]\n"

    run_with_agent(tmp_path, scenario, rules=_rules(prolog=(prolog,)))


def test_a_failing_run_prolog_is_reported_failed(tmp_path: Path) -> None:
    prolog = _script(tmp_path / "prolog", "exit 1\n")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "run_prolog", "job_id": 17, "node": "node02", "run": 3, "job": {"user": ME}})
        msg = await ctl.expect("prolog_epilog", job_id=17)
        assert (msg["what"], msg["run"]) == ("prolog_failed", 3)
        assert "exited with status 1" in msg["error"]

    run_with_agent(tmp_path, scenario, rules=_rules(prolog=(prolog,)))


def test_the_job_sees_the_cluster_s_name(tmp_path: Path, work: Path) -> None:
    # env_array_for_batch_job's SLURM_CLUSTER_NAME: slurm.conf's ClusterName, which the
    # registration's answer gave the agent.
    seen = work / "job.env"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(12, f"#!/bin/bash\nenv > {seen}\n", work)})
        await ctl.expect("completed", job_id=12)
        assert _env_file(seen)["SLURM_CLUSTER_NAME"] == "testcluster"

    run_with_agent(tmp_path, scenario, rules=_rules())
