"""scontrol setdebug against the real controller (cli.main against a live server): an
administrator's level shows in ``scontrol show config`` until a reconfigure; the refusals
are scontrol's words."""

from __future__ import annotations

import pytest

from cluster.models import ClusterConfig

pytestmark = pytest.mark.django_db(transaction=True)


def debug_line(live_cli) -> list[str]:
    out = live_cli("admin", "scontrol", "show", "config")[1]
    return [line for line in out.splitlines() if line.startswith("SlurmctldDebug ")]


def test_setdebug_until_reconfigure(demo, users, live_cli):
    assert live_cli("admin", "scontrol", "setdebug", "debug2") == (0, "", "")
    assert ClusterConfig.objects.get(pk=1).options["SlurmctldDebug"] == "debug2"
    assert debug_line(live_cli) == ["SlurmctldDebug          = debug2"]
    assert live_cli("admin", "scontrol", "setdebug", "4") == (0, "", "")
    assert ClusterConfig.objects.get(pk=1).options["SlurmctldDebug"] == "verbose"
    assert live_cli("admin", "scontrol", "reconfigure")[0] == 0
    assert "SlurmctldDebug" not in ClusterConfig.objects.get(pk=1).options  # the demo's slurm.conf has none


def test_setdebug_refusals(demo, users, live_cli):
    assert live_cli("alice", "scontrol", "setdebug", "debug") == (
        1, "", "slurm_set_debug_level error: Access/permission denied\n"
    )  # fmt: skip
    assert live_cli("admin", "scontrol", "setdebug", "loud") == (1, "", "invalid debug level: loud\n")
    assert live_cli("admin", "scontrol", "setdebug", "10") == (1, "", "invalid debug level: 10\n")
    assert live_cli("admin", "scontrol", "setdebug") == (1, "", "too few arguments for keyword:setdebug\n")
    assert live_cli("admin", "scontrol", "setdebug", "info", "x", "y") == (
        1, "", "too many arguments for keyword:setdebug\n"
    )  # fmt: skip
    assert live_cli("admin", "scontrol", "setdebug", "info", "x") == (1, "", "Invalid option: info\n")
    assert "SlurmctldDebug" not in ClusterConfig.objects.get(pk=1).options
