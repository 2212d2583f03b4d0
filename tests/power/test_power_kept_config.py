"""The power configuration in force and the configuration's load time, read by every
power-save cycle from the kept configuration row (``scheduler_params.config``) inside
``pass_snapshot.keep()``: after each reconfigure (a new SuspendTime, a new load time) they
are what a fresh read outside ``keep()`` gives."""

from __future__ import annotations

import random

import pytest

from cluster.models import ClusterConfig
from cluster.services import pass_snapshot
from cluster.services.configuration import config_load
from power import services

pytestmark = pytest.mark.django_db

CONF = """\
ClusterName=test
SlurmctldHost=ctl
SuspendProgram=/bin/true
ResumeProgram=/bin/true
SuspendTime={suspend}
NodeName=n[01-04] CPUs=4
PartitionName=all Nodes=n[01-04] Default=YES
"""


def test_the_cycle_reads_the_configuration_in_force_after_each_reconfigure(tmp_path, settings) -> None:
    settings.CONF_DIR = tmp_path
    rng = random.Random(7)
    seen = set()
    with pass_snapshot.keep():
        for _ in range(6):
            suspend = rng.choice([60, 300, 900, "INFINITE"])
            (tmp_path / "slurm.conf").write_text(CONF.format(suspend=suspend))
            config_load(path=tmp_path / "slurm.conf")
            for _ in range(2):  # the second from what is kept
                power = services.settings_in_force()
                assert power.suspend_time == (-1 if suspend == "INFINITE" else suspend)
                assert services._loaded() == ClusterConfig.current().loaded_at.timestamp()
            seen.add(power.suspend_time)
    assert len(seen) > 1
