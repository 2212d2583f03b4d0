"""SlurmctldDebug and scontrol setdebug: Slurm's levels read as Slurm reads them, refused
with file:line in slurm.conf, and a server process's root logger following the
configuration's level once it says so (cluster/log_levels.py)."""

from __future__ import annotations

import logging

import pytest

from cluster import log_levels
from cluster.models import ClusterConfig, Event
from cluster.services.debug_level import debug_level_set
from cluster.services.errors import PermissionDenied, ServiceError
from slurmwords.debug_levels import config_level, setdebug_level
from tests.cluster.test_slurmconf import errors, parse


def test_levels_as_slurm_reads_them():
    assert [config_level(w) for w in ("info", "DEBUG2", "0", "5", "42", "7x")] == [
        "info", "debug2", "quiet", "debug", "debug5", "debug3"
    ]  # fmt: skip
    with pytest.raises(ValueError):
        config_level("loud")
    assert [setdebug_level(w) for w in ("Verbose", "9", "10", "5x", "", "-1")] == [
        "verbose", "debug5", None, None, None, None
    ]  # fmt: skip


def test_slurm_conf_refuses_an_unknown_level_at_its_line():
    assert parse("SlurmctldDebug=debug3\n").options["SlurmctldDebug"] == "debug3"
    assert errors("SlurmdDebug=loud\n") == [
        "slurm.conf:3: SlurmdDebug=loud: not a debug level "
        "(quiet, fatal, error, info, verbose, debug, debug2, debug3, debug4, debug5, or 0-9)"
    ]


@pytest.fixture
def root_level():
    root = logging.getLogger()
    kept = root.level
    yield root
    root.setLevel(kept)
    log_levels._following = False


@pytest.mark.django_db
def test_a_following_process_takes_the_level_at_its_next_read(demo, users, root_level):
    root_level.setLevel(logging.INFO)
    ClusterConfig.current()
    assert debug_level_set(actor=users["admin"], level="debug2") == "debug2"
    ClusterConfig.current()
    assert root_level.level == logging.INFO  # this process does not follow: a test, a CLI

    log_levels.follow()
    assert debug_level_set(actor=users["admin"], level="3") == "info"
    assert debug_level_set(actor=users["admin"], level="ERROR") == "error"
    ClusterConfig.current()
    assert root_level.level == logging.ERROR
    debug_level_set(actor=users["admin"], level="debug")
    ClusterConfig.current()
    assert root_level.level == logging.DEBUG
    events = Event.objects.filter(reason="setdebug").order_by("id")
    events = list(events.values_list("old_state", "new_state", "user"))
    assert events == [
        ("info", "debug2", "admin"), ("debug2", "info", "admin"), ("info", "error", "admin"),
        ("error", "debug", "admin"),
    ]  # fmt: skip


@pytest.mark.django_db
def test_only_an_administrator_sets_it_and_only_to_a_level(demo, users):
    revision = ClusterConfig.current().revision
    with pytest.raises(PermissionDenied, match="Access/permission denied"):
        debug_level_set(actor=users["alice"], level="debug")
    with pytest.raises(ServiceError, match="invalid debug level: loud"):
        debug_level_set(actor=users["admin"], level="loud")
    with pytest.raises(ServiceError, match="invalid debug level: True"):
        debug_level_set(actor=users["admin"], level=True)
    assert ClusterConfig.objects.get(pk=1).revision == revision
    assert not Event.objects.filter(reason="setdebug").exists()
