"""Runtime power settings (the "Overview" exceptions of Slurm's power_save.html,
SuspendExc*): a per-node SuspendTime through scontrol update / REST with its
accept/refuse rules and the sticky automatic power saving, and SuspendExcNodes/Parts/States
updated with scontrol, kept or reset on reconfigure (ReconfigFlags=KeepPowerSaveSettings)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from cli.client import ApiError
from cli.scontrol import cmd_update, config_lines
from cluster.models import ClusterConfig, Event, Node
from cluster.services.configuration import config_load
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.nodes import node_update
from power import services
from power.models import PowerState

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(conf_dir: Path, settings):
    """The demo configuration with runnable programs (SuspendTime only on ``cloud``)."""
    settings.CONF_DIR = conf_dir
    text = (
        (conf_dir / "slurm.conf").read_text().replace('Program="/bin/sh power/', 'Program="/bin/true power/')
    )
    (conf_dir / "slurm.conf").write_text(text)
    config_load(path=conf_dir / "slurm.conf")
    return conf_dir


def without_programs(conf_dir: Path) -> None:
    """The demo with no power programs (and no finite SuspendTime): not "ready"."""
    lines = [
        line
        for line in (conf_dir / "slurm.conf").read_text().splitlines()
        if not line.startswith(("ResumeProgram", "SuspendProgram", "ResumeFailProgram"))
    ]
    (conf_dir / "slurm.conf").write_text("\n".join(lines) + "\n")
    parts = (conf_dir / "partitions.conf").read_text()
    (conf_dir / "partitions.conf").write_text(re.sub(r"SuspendTime=\S+", "", parts))
    config_load(path=conf_dir / "slurm.conf")


class Client:
    """The CLI's client interface over the test API client (the real endpoints)."""

    def __init__(self, api) -> None:
        self.api = api

    def post(self, path: str, body: dict | None = None):
        r = self.api.post(path, body or {}, format="json")
        if r.status_code >= 400:
            raise ApiError(r.status_code, r.json().get("error", ""), r.json())
        return r.json()

    def get(self, path: str):
        return self.api.get(path).json()


# --------------------------------------------------------------------------- SuspendTime


def test_per_node_suspend_time_takes_effect_at_once_and_is_sticky(demo, users, api):
    state = PowerState.current()
    state.auto_enabled = False  # as if no finite SuspendTime were configured
    state.save()
    assert cmd_update(Client(api("admin")), ["NodeName=node[01-02]", "SuspendTime=120"], None) == 0
    assert list(
        Node.objects.filter(name__in=["node01", "node02"]).values_list("suspend_time", flat=True)
    ) == [
        120,
        120,
    ]
    assert PowerState.current().auto_enabled and PowerState.current().dirty
    # INFINITE stops the node suspending; automatic power saving stays on until reconfigure.
    node_update(actor=users["admin"], nodes="node01", suspend_time="INFINITE")
    assert Node.objects.get(name="node01").suspend_time == -1 and PowerState.current().auto_enabled
    node_update(actor=users["admin"], nodes="node01", suspend_time="NONE")
    assert Node.objects.get(name="node01").suspend_time is None
    with pytest.raises(ServiceError, match="Invalid SuspendTime"):
        node_update(actor=users["admin"], nodes="node01", suspend_time="soon")
    with pytest.raises(PermissionDenied):
        node_update(actor=users["alice"], nodes="node01", suspend_time="60")


def test_suspend_time_update_is_refused_without_power_programs(demo, users, api):
    without_programs(demo)
    for value in ("60", "INFINITE"):
        r = api("admin").post("/api/nodes/update/", {"nodes": "node01", "suspend_time": value}, format="json")
        assert r.status_code == 400 and "power save is not configured" in r.json()["error"]
    assert Node.objects.get(name="node01").suspend_time is None


def test_a_reconfigure_resets_the_sticky_flag(demo, users):
    parts = (demo / "partitions.conf").read_text()
    (demo / "partitions.conf").write_text(re.sub(r"SuspendTime=\S+", "", parts))
    config_load(path=demo / "slurm.conf")  # programs, but no finite SuspendTime: off
    assert not PowerState.current().auto_enabled
    node_update(actor=users["admin"], nodes="node01", suspend_time="300")
    assert PowerState.current().auto_enabled
    config_load(path=demo / "slurm.conf")
    assert not PowerState.current().auto_enabled
    assert Node.objects.get(name="node01").suspend_time is None  # the file's value again


# --------------------------------------------------------------------------- SuspendExc*


def test_scontrol_update_suspend_exc_is_staff_only_recorded_and_shown(demo, users, api):
    client = Client(api("admin"))
    words = ["SuspendExcNodes=node[01-04]:2,node09", "SuspendExcParts=debug", "SuspendExcStates=down,drain"]
    assert cmd_update(client, words, None) == 0
    power = services.settings_in_force()
    exc = services.exclusions_in_force(power)
    assert exc.nodes == {"node09"} and exc.parts == {"debug"} and exc.states == {"DOWN", "DRAIN"}
    assert [s.count for s in exc.counted] == [2]
    event = Event.objects.get(new_state="power settings")
    assert event.user == "admin" and "SuspendExcNodes=node[01-04]:2,node09" in event.reason
    # scontrol show config shows the values in force.
    shown = "\n".join(config_lines(client.get("/api/config/"), "now"))
    assert "SuspendExcNodes" in shown and "node[01-04]:2,node09" in shown
    assert "SuspendExcStates" in shown and "DOWN,DRAIN" in shown
    assert client.get("/api/power/settings/")["SuspendExcParts"] == "debug"
    # Only the given key changes; NONE clears it.
    assert cmd_update(client, ["SuspendExcParts=NONE"], None) == 0
    exc = services.exclusions_in_force(power)
    assert exc.parts == frozenset() and exc.nodes == {"node09"}
    # Validation as for the file, and staff only.
    with pytest.raises(ServiceError, match="nodes not defined: ghost1"):
        services.suspend_exc_update(actor=users["admin"], nodes="ghost1")
    with pytest.raises(ServiceError, match="invalid state"):
        services.suspend_exc_update(actor=users["admin"], states="SLEEPY")
    r = api("alice").post("/api/power/settings/", {"SuspendExcParts": "debug"}, format="json")
    assert r.status_code == 403


def test_runtime_exclusions_keep_an_idle_node_powered_up(demo, users):
    services.suspend_exc_update(actor=users["admin"], nodes="cloud01")
    now = timezone.now()
    Node.objects.filter(name__in=["cloud01", "cloud02"]).update(flags=0, base_state="IDLE", last_busy=now)
    services.power_pass(now=now + timedelta(seconds=120), force=True)
    assert not Node.objects.get(name="cloud01").flags
    assert Node.objects.get(name="cloud02").flags  # POWERING_DOWN: SuspendTime=60 passed


@pytest.mark.parametrize("keep", [False, True])
def test_reconfigure_keeps_runtime_exclusions_only_with_keep_power_save_settings(demo, users, keep):
    if keep:
        with open(demo / "slurm.conf", "a") as f:
            f.write("ReconfigFlags=KeepPowerSaveSettings\n")
        config_load(path=demo / "slurm.conf")
    services.suspend_exc_update(actor=users["admin"], parts="debug")
    config_load(path=demo / "slurm.conf")
    parts = services.exclusions_in_force(services.settings_in_force()).parts
    assert parts == ({"debug"} if keep else frozenset())
    assert ("SuspendExcParts" in ClusterConfig.current().options) is keep
