"""The agent checks a ``Location=slurmd`` PowerAction's program on its own node (the
controller cannot see the node's files) and tells the controller at registration which
configured actions it can run (#13 point 7)."""

from __future__ import annotations

import os
from pathlib import Path

from agent.daemon import Agent
from agent.nodeconf import NodeRules, load_rules
from agent.power import program_problem
from tests.agent.harness import FakeController, run_with_agent


def program(tmp_path: Path, name: str, mode: int = 0o755) -> Path:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'ran'}\n")
    path.chmod(mode)
    return path


def test_a_program_is_checked_as_slurm_checks_a_power_program(tmp_path: Path) -> None:
    assert program_problem(str(program(tmp_path, "ok"))) == ""
    assert program_problem("relative/prog") == "not an absolute pathname"
    assert program_problem(str(tmp_path / "missing")).startswith("not found")
    assert program_problem(str(tmp_path)) == "not a regular file"
    assert program_problem(str(program(tmp_path, "shared", 0o775))) == "has group or world write permission"
    assert program_problem(str(program(tmp_path, "open", 0o757))) == "has group or world write permission"
    if os.geteuid() != 0:  # root may execute anything with an x bit; a file without one is refused
        assert program_problem(str(program(tmp_path, "plain", 0o644))) == "not executable"


def test_registration_says_which_actions_the_node_can_run(tmp_path: Path) -> None:
    good = program(tmp_path, "off")
    bad = program(tmp_path, "writable", 0o777)
    rules = NodeRules(
        power_programs={"off": (str(good), "-h"), "gone": (str(tmp_path / "nope"),), "loose": (str(bad),)}
    )

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        nodes = ctl.registers[-1]["nodes"]
        reports = {n["name"]: n["power_actions"] for n in nodes}
        for report in reports.values():
            assert report["off"] == ""
            assert report["gone"].startswith("not found")
            assert report["loose"] == "has group or world write permission"

    run_with_agent(tmp_path, scenario, rules=rules)


def test_a_program_that_fails_the_check_is_never_started(tmp_path: Path) -> None:
    loose = program(tmp_path, "loose", 0o777)
    rules = NodeRules(power_programs={"loose": (str(loose),)})

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "power_action", "run_id": 4, "node": "node01", "action": "loose", "env": {}})
        done = await ctl.expect("power_action_done")
        assert done["exit_code"] == 127
        assert done["error"] == f"program {loose} has group or world write permission"
        assert not (tmp_path / "ran").exists()

    run_with_agent(tmp_path, scenario, rules=rules)


def test_registration_carries_the_active_features_the_helpers_report(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    helper = conf / "images"
    helper.write_text("#!/bin/sh\necho img_a\necho not_mine\n")
    helper.chmod(0o755)
    (conf / "slurm.conf").write_text(
        "ClusterName=t\nSlurmctldHost=ctl\nNodeFeaturesPlugins=node_features/helpers\n"
        "NodeName=node[01-02] CPUs=4 Feature=img_a,img_b\n"
    )
    (conf / "helpers.conf").write_text(f"NodeName=node01 Feature=img_a,img_b Helper={helper}\n")
    rules = load_rules(conf / "slurm.conf")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        nodes = {n["name"]: n for n in ctl.registers[-1]["nodes"]}
        assert nodes["node01"]["active_features"] == "img_a"  # only its line's features
        assert "active_features" not in nodes["node02"]  # no Helper for it: nothing reported

    run_with_agent(tmp_path, scenario, rules=rules)
