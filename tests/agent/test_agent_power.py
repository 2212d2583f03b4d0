"""A ``Location=slurmd`` PowerAction run by the agent (docs/agent-protocol.md, power_action).

The agent runs only the programs its own slurm.conf names, whatever argv it is sent.
"""

from __future__ import annotations

from pathlib import Path

from agent.daemon import Agent
from agent.nodeconf import NodeRules, load_rules
from tests.agent.harness import FakeController, run_with_agent


def suspend_script(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "ran"
    script = tmp_path / "node_suspend"
    script.write_text(f'#!/bin/sh\necho "$SLURM_NODE_NAME $* ${{LD_PRELOAD:-}}" >> {out}\nexit 3\n')
    script.chmod(0o755)
    return script, out


def test_power_action_runs_once_on_its_node_with_the_node_name(tmp_path: Path) -> None:
    script, out = suspend_script(tmp_path)
    missing = str(tmp_path / "nope")
    rules = NodeRules(power_programs={"off": (str(script), "-h", "now"), "gone": (missing,)})

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        argv = [str(script), "-h", "now", "node02"]
        await ctl.send({"type": "power_action", "run_id": 7, "node": "node02", "argv": argv, "env": {}})
        done = await ctl.expect("power_action_done")
        assert (done["run_id"], done["node"], done["exit_code"], done["error"]) == (7, "node02", 3, "")
        assert out.read_text() == "node02 -h now node02 \n"
        # A configured program that cannot start, and a node this agent does not host.
        await ctl.send(
            {"type": "power_action", "run_id": 8, "node": "node01", "argv": [missing, "node01"], "env": {}}
        )
        gone = await ctl.expect("power_action_done")
        assert gone["run_id"] == 8 and gone["exit_code"] == 127 and "not found" in gone["error"]
        await ctl.send(
            {"type": "power_action", "run_id": 9, "node": "node77", "argv": [str(script)], "env": {}}
        )
        foreign = await ctl.expect("power_action_done")
        assert foreign["exit_code"] == 127 and "not hosted" in foreign["error"]
        assert out.read_text().count("\n") == 1

    run_with_agent(tmp_path, scenario, rules=rules)


def test_power_action_not_in_the_configuration_is_refused(tmp_path: Path) -> None:
    script, out = suspend_script(tmp_path)
    rules = NodeRules(power_programs={"off": (str(script), "-h", "now")}, source="/etc/slurm/slurm.conf")
    touched = tmp_path / "touched"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        refused = [
            ["/bin/touch", str(touched), "node01"],  # any program at all
            [str(script), "-r", "node01"],  # the configured program with other arguments
            [str(script), "-h", "now", "node02"],  # another node's name
            [str(script), "-h", "now"],  # the node name missing
        ]
        for run_id, argv in enumerate(refused, start=20):
            await ctl.send({"type": "power_action", "run_id": run_id, "node": "node01", "argv": argv})
            done = await ctl.expect("power_action_done", run_id=run_id)
            assert done["exit_code"] == 127
            assert done["error"] == (
                "this program is not a Location=slurmd PowerAction in /etc/slurm/slurm.conf"
            )
        await ctl.send(
            {"type": "power_action", "run_id": 30, "node": "node01", "action": "reboot", "argv": []}
        )
        unknown = await ctl.expect("power_action_done", run_id=30)
        assert unknown["exit_code"] == 127 and unknown["error"].startswith("PowerAction reboot is not")
        # By name, the agent's own Program is run; only SLURM_* variables of the message pass.
        env = {"LD_PRELOAD": "/tmp/evil.so", "SLURM_X": "1"}
        await ctl.send({"type": "power_action", "run_id": 31, "node": "node01", "action": "off", "env": env})
        ran = await ctl.expect("power_action_done", run_id=31)
        assert ran["exit_code"] == 3
        assert out.read_text() == "node01 -h now node01 \n"
        assert not touched.exists()

    run_with_agent(tmp_path, scenario, rules=rules)


def test_rules_come_from_slurm_conf(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=c\nSlurmctldHost=h\nDisableRootJobs=NO\nNodeName=n[1-2] CPUs=1\n"
        "PartitionName=p Nodes=ALL\n"
        'PowerAction=off Location=slurmd Program="/sbin/shutdown -h now"\n'
        'PowerAction=up Location=slurmctld Program="/usr/bin/true"\n'
    )
    rules = load_rules(conf)
    assert rules.root_jobs
    assert rules.power_programs == {"off": ("/sbin/shutdown", "-h", "now")}
    assert rules.power_program(["/sbin/shutdown", "-h", "now", "n1"], "n1") == "off"
    assert rules.power_program(["/usr/bin/true", "n1"], "n1") is None  # a slurmctld action
    conf.write_text(conf.read_text().replace("DisableRootJobs=NO\n", ""))
    assert not load_rules(conf).root_jobs  # stricter than Slurm: root jobs need an explicit NO
