"""A node's Arch=, OS= and Version= in scontrol show node: what its agent reports of its
host, as slurmd does (they were always "(null)")."""

from __future__ import annotations

import os

from agent import daemon
from cli.scontrol import node_record, render_record
from cluster.models import Node
from cluster.services import agents
from slurmwords.version import SLURM_VERSION


def test_the_agent_reports_unames_machine_and_system(monkeypatch):
    uname = os.uname()
    monkeypatch.delenv("SLURM_ARCH", raising=False)
    monkeypatch.delenv("SLURM_OS", raising=False)
    assert daemon._host_system() == (uname.machine, f"{uname.sysname} {uname.release} {uname.version}")
    # slurmd's overrides
    monkeypatch.setenv("SLURM_ARCH", "aarch64")
    monkeypatch.setenv("SLURM_OS", "Linux test")
    assert daemon._host_system() == ("aarch64", "Linux test")
    info = daemon.NodeSpec(name="node05", cpus=4, real_memory=2000).info(boot_time=1.0)
    assert (info.arch, info.os, info.version) == (daemon.HOST_ARCH, daemon.HOST_OS, SLURM_VERSION)


def test_registration_stores_them_and_scontrol_shows_them(demo, users, api):
    info = daemon.NodeSpec(name="node05", cpus=4, real_memory=2000).info(boot_time=1.0).to_wire()
    agents.agent_register(agent_id="a:1", nodes=[info], running=[], completions=[])
    shown = render_record(node_record(api("alice").get("/api/nodes/node05/").json()))
    assert f"NodeName=node05 Arch={daemon.HOST_ARCH} CoresPerSocket=1\n" in shown
    assert f"Version={SLURM_VERSION}\n" in shown
    assert f"\n   OS={daemon.HOST_OS}\n" in shown
    # An agent that does not report them (an earlier one) leaves them as they were.
    bare = {k: v for k, v in info.items() if k not in ("arch", "os", "version")}
    agents.agent_register(agent_id="a:1", nodes=[bare], running=[], completions=[])
    node = Node.objects.get(name="node05")
    assert (node.arch, node.os, node.slurmd_version) == (daemon.HOST_ARCH, daemon.HOST_OS, SLURM_VERSION)
