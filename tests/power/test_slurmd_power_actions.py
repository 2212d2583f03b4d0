"""A ``Location=slurmd`` PowerAction's program is checked on the nodes, not on the
controller: the configuration accepts a path the controller does not have, each agent
reports at registration whether its node can run it, and the controller refuses or skips
the action on the nodes that cannot (#13 point 7)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from cluster import publish
from cluster.core.slurmconf import parse_slurm_conf_text
from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from power import services
from power.core.config import executable_check, power_config
from power.core.policy import PowerNode, SuspendNodes, power_cycle
from power.models import NodePowerActions, PowerRun

MISSING = "/nonexistent/fsched-test/shutdown"  # on no controller: it lives on the nodes


def test_a_slurmd_program_is_not_checked_on_the_controller() -> None:
    text = (
        "ClusterName=t\nSlurmctldHost=ctl\n"
        f'PowerAction=off Location=slurmd Program="{MISSING} -h now"\n'
        "SuspendProgram=off\nResumeProgram=/bin/true\nNodeName=n[1-2] CPUs=1\n"
    )
    cfg = power_config(parse_slurm_conf_text(text), program_check=executable_check)
    assert cfg.suspend_program is not None and cfg.suspend_program.path == MISSING


def test_automatic_suspend_skips_a_node_that_cannot_run_the_program() -> None:
    text = (
        "ClusterName=t\nSlurmctldHost=ctl\n"
        f'PowerAction=off Location=slurmd Program="{MISSING}"\n'
        "SuspendProgram=off\nResumeProgram=/bin/true\nSuspendTime=60\nNodeName=n[1-2] CPUs=1\n"
        "PartitionName=p Nodes=n[1-2]\n"
    )
    cfg = power_config(parse_slurm_conf_text(text))
    nodes = [
        PowerNode("n1", NodeBase.IDLE, 0, ("p",), unrunnable=(("off", "not found"),)),
        PowerNode("n2", NodeBase.IDLE, 0, ("p",)),
    ]
    result = power_cycle(cfg, nodes, now=1000.0, auto_enabled=True)
    assert [d.nodes for d in result.of(SuspendNodes)] == [("n2",)]


@pytest.fixture
def slurmd_conf(conf_dir: Path, settings):
    text = (conf_dir / "slurm.conf").read_text()
    text += f'PowerAction=node_off Location=slurmd Program="{MISSING} -h now"\n'
    (conf_dir / "slurm.conf").write_text(text)
    settings.CONF_DIR = conf_dir
    config_load(path=conf_dir / "slurm.conf")  # refused on the controller before #13 point 7
    return conf_dir


def register(name: str, actions: dict[str, str]) -> None:
    info = {"name": name, "cpus": 4, "real_memory": 2000, "boot_time": 1.0, "power_actions": actions}
    agents.agent_register(agent_id=f"a:{name}", nodes=[info], running=[], completions=[])


@pytest.mark.django_db
def test_the_agents_report_decides_where_the_action_may_run(slurmd_conf, users, monkeypatch) -> None:
    sent: list[tuple[str, dict]] = []
    monkeypatch.setattr(publish, "to_agent", lambda node, payload: sent.append((node, payload)))
    register("node01", {"node_off": f"not found ({MISSING})"})
    register("node02", {"node_off": ""})
    assert NodePowerActions.objects.get(node="node01").unrunnable() == {"node_off": f"not found ({MISSING})"}

    with pytest.raises(ServiceError, match=r"node01 cannot run PowerAction node_off .*: not found"):
        services.power_command(actor=users["admin"], words=["down", "node01", "Action=node_off"])
    assert not Node.objects.get(name="node01").flags & NodeFlag.POWER_DOWN

    services.power_command(actor=users["admin"], words=["down", "node02", "Action=node_off"])
    services.power_pass(now=timezone.now() + timedelta(seconds=1), force=True)
    run = PowerRun.objects.get(host="node02")
    assert run.argv == [MISSING, "-h", "now", "node02"]
    assert [(n, p["type"], p["action"]) for n, p in sent] == [("node02", "power_action", "node_off")]


@pytest.mark.django_db
def test_a_run_for_a_node_that_cannot_is_recorded_failed_and_not_sent(slurmd_conf, users, monkeypatch):
    sent: list[tuple[str, dict]] = []
    monkeypatch.setattr(publish, "to_agent", lambda node, payload: sent.append((node, payload)))
    register("node03", {"node_off": ""})
    services.power_command(actor=users["admin"], words=["down", "node03", "Action=node_off"])
    register("node03", {"node_off": "has group or world write permission"})  # changed since
    services.power_pass(now=timezone.now() + timedelta(seconds=1), force=True)
    run = PowerRun.objects.get(host="node03")
    assert run.exit_code == 127 and run.ended is not None
    assert run.failure.endswith(
        "cannot run PowerAction node_off (" + MISSING + "): has group or world write permission"
    )
    assert not [p for _, p in sent if p["type"] == "power_action"]
