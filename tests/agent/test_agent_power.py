"""A ``Location=slurmd`` PowerAction run by the agent (docs/agent-protocol.md, power_action)."""

from __future__ import annotations

from pathlib import Path

from agent.daemon import Agent
from tests.agent.harness import FakeController, run_with_agent


def test_power_action_runs_once_on_its_node_with_the_node_name(tmp_path: Path) -> None:
    out = tmp_path / "ran"
    script = tmp_path / "node_suspend"
    script.write_text(f'#!/bin/sh\necho "$SLURM_NODE_NAME $*" >> {out}\nexit 3\n')
    script.chmod(0o755)

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        argv = [str(script), "-h", "now", "node02"]
        await ctl.send({"type": "power_action", "run_id": 7, "node": "node02", "argv": argv, "env": {}})
        done = await ctl.expect("power_action_done")
        assert (done["run_id"], done["node"], done["exit_code"], done["error"]) == (7, "node02", 3, "")
        assert out.read_text() == "node02 -h now node02\n"
        # A program that cannot start, and a node this agent does not host.
        await ctl.send(
            {
                "type": "power_action",
                "run_id": 8,
                "node": "node01",
                "argv": [str(tmp_path / "nope")],
                "env": {},
            }
        )
        missing = await ctl.expect("power_action_done")
        assert (
            missing["run_id"] == 8 and missing["exit_code"] == 127 and "could not start" in missing["error"]
        )
        await ctl.send(
            {"type": "power_action", "run_id": 9, "node": "node77", "argv": [str(script)], "env": {}}
        )
        foreign = await ctl.expect("power_action_done")
        assert foreign["exit_code"] == 127 and "not hosted" in foreign["error"]
        assert out.read_text().count("\n") == 1

    run_with_agent(tmp_path, scenario)
