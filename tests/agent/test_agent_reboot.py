"""``scontrol reboot`` on the agent (#13 point 8; docs/agent-protocol.md, ``reboot``): the
agent runs its own slurm.conf's RebootProgram, and the next agent on its spool reports a new
boot time for the rebooted node only."""

from __future__ import annotations

from pathlib import Path

from agent.daemon import Agent
from agent.nodeconf import NodeRules, load_rules
from agent.spool import Spool
from tests.agent.harness import FakeController, run_with_agent


def reboot_script(tmp_path: Path, status: int) -> tuple[Path, Path]:
    out = tmp_path / "rebooted"
    script = tmp_path / f"reboot{status}"
    script.write_text(
        f'#!/bin/sh\necho "$SLURM_NODE_NAME $* ${{FSCHED_SECRET:-none}}" >> {out}\nexit {status}\n'
    )
    script.chmod(0o755)
    return script, out


def test_reboot_runs_the_configured_program_with_only_the_node_name(tmp_path: Path, monkeypatch) -> None:
    ok, out = reboot_script(tmp_path, 0)
    monkeypatch.setenv("FSCHED_SECRET", "leaked")  # the agent's environment is not the program's
    rules = NodeRules(reboot_program=(str(ok), "-r", "now"))

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "reboot", "node": "node02"})
        done = await ctl.expect("reboot_done")
        assert (done["node"], done["exit_code"], done["error"]) == ("node02", 0, "")
        assert out.read_text() == "node02 -r now none\n"
        # The next agent on this spool reports a new boot time for node02.
        assert Spool(tmp_path / "spool")._rebooting() == {"node02"}
        await ctl.send({"type": "reboot", "node": "node77"})
        foreign = await ctl.expect("reboot_done")
        assert foreign["exit_code"] == 127 and "not hosted" in foreign["error"]

    run_with_agent(tmp_path, scenario, rules=rules)


def test_a_failing_or_missing_program_leaves_no_mark(tmp_path: Path) -> None:
    failing, out = reboot_script(tmp_path, 4)

    async def failed(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "reboot", "node": "node01"})
        done = await ctl.expect("reboot_done")
        assert (done["exit_code"], done["error"]) == (4, "")
        assert out.read_text() == "node01  none\n"
        assert Spool(tmp_path / "spool")._rebooting() == set()

    run_with_agent(tmp_path, failed, rules=NodeRules(reboot_program=(str(failing),)))

    async def undefined(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "reboot", "node": "node01"})
        done = await ctl.expect("reboot_done")
        assert done["exit_code"] == 127
        assert done["error"] == "RebootProgram isn't defined in /etc/slurm/slurm.conf"

    run_with_agent(tmp_path, undefined, rules=NodeRules(source="/etc/slurm/slurm.conf"))


def test_the_next_agent_reports_a_new_boot_time_for_the_rebooted_node_only(tmp_path: Path) -> None:
    Spool(tmp_path / "spool").mark_rebooting("node02")
    seen: dict[str, float] = {}

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "registered", "nodes": ["node01", "node02"], "rejected": {}, "kill": [],
                        "ping_interval": 5})  # fmt: skip
        agent._emit(agent._register())
        register = await ctl.expect("register")
        seen.update({n["name"]: n["boot_time"] for n in register["nodes"]})
        assert seen["node02"] == agent.started_at

    run_with_agent(tmp_path, scenario, boot_time=100.0)
    assert seen["node01"] == 100.0 and seen["node02"] > 100.0
    assert Spool(tmp_path / "spool")._rebooting() == set()  # read once


def test_reboot_program_comes_from_slurm_conf(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    base = "ClusterName=c\nSlurmctldHost=h\nNodeName=n[1-2] CPUs=1\nPartitionName=p Nodes=ALL\n"
    conf.write_text(base + 'RebootProgram="/sbin/reboot -f"\n')
    assert load_rules(conf).reboot_program == ("/sbin/reboot", "-f")
    conf.write_text(base + 'PowerAction=rb Location=slurmd Program="/usr/sbin/kexec -e"\nRebootProgram=rb\n')
    assert load_rules(conf).reboot_program == ("/usr/sbin/kexec", "-e")
    conf.write_text(base + "RebootProgram=reboot\n")  # not an absolute path: none
    assert load_rules(conf).reboot_program == ()
    conf.write_text(base)
    assert load_rules(conf).reboot_program == ()
