"""A power-save cycle that can decide nothing on a clean row (power.services._quiet_pass)
is one UPDATE outside a transaction, written only while the row is as read; the row after
it is as the whole cycle writes it, and a row changed meanwhile leaves the whole cycle to
run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.core.states import NodeBase
from cluster.models import Node
from cluster.services import pass_snapshot
from cluster.services.configuration import config_load
from power import cycle_input, services
from power.models import PowerState
from tests.power.test_power_cycle_quiet import CONF, NOW

pytestmark = pytest.mark.django_db

RATES = {"suspends": [NOW - 100, NOW - 30], "resumes": [NOW - 61]}
AFTER = {"suspends": [NOW - 30], "resumes": []}


@pytest.fixture
def quiet_cluster(tmp_path, settings):
    (tmp_path / "slurm.conf").write_text(CONF.format(suspend=600, exc="", short="", long="", spare=""))
    settings.CONF_DIR = tmp_path
    config_load(path=tmp_path / "slurm.conf")
    Node.objects.update(base_state=NodeBase.IDLE, flags=0, last_busy=datetime.fromtimestamp(NOW - 60, UTC))


def _row(*, dirty: bool) -> None:
    PowerState.objects.filter(pk=1).update(
        dirty=dirty, rates=RATES, last_run=datetime.fromtimestamp(NOW - 10, UTC)
    )


def _cycle() -> tuple[str, list[str]]:
    with pass_snapshot.keep(), CaptureQueriesContext(connection) as seen:
        said = services.power_pass(now=datetime.fromtimestamp(NOW, UTC), force=True)
    return said, [q["sql"] for q in seen.captured_queries]


def _state() -> tuple[bool, float, dict]:
    state = PowerState.objects.get(pk=1)
    return state.dirty, state.last_run.timestamp(), state.rates


@pytest.mark.usefixtures("quiet_cluster")
def test_a_quiet_cycle_on_a_clean_row_is_one_update_outside_a_transaction() -> None:
    _row(dirty=True)
    whole, whole_sql = _cycle()  # a dirty row: the whole cycle, in its transaction
    whole_state = _state()
    assert any(s.startswith("SAVEPOINT") for s in whole_sql)
    _row(dirty=False)
    quiet, quiet_sql = _cycle()
    assert quiet == whole == "decisions=0 deferred_suspends=0 deferred_resumes=0"
    assert _state() == whole_state == (False, NOW, AFTER)
    writes = [s for s in quiet_sql if not s.startswith("SELECT")]
    assert len(writes) == 1 and writes[0].startswith('UPDATE "power_powerstate"'), quiet_sql
    assert sum('FROM "power_powerstate"' in s for s in quiet_sql) == 1


@pytest.mark.parametrize(
    ("meanwhile", "dirty"),
    [
        ({"dirty": True}, False),  # a node changed: marked dirty
        # A reconfigure: the whole cycle finds its nodes chosen from a stale row, runs again.
        ({"auto_enabled": False}, True),
        ({"last_run": datetime.fromtimestamp(NOW - 5, UTC)}, False),  # another cycle ran
    ],
)
@pytest.mark.usefixtures("quiet_cluster")
def test_a_row_changed_after_it_was_read_runs_the_whole_cycle(monkeypatch, meanwhile, dirty) -> None:
    _row(dirty=False)
    PowerState.objects.filter(pk=1).update(auto_enabled=True)
    real = cycle_input.quiet
    changed = []

    def quiet_then_changed(*args, **kwargs):
        if not changed:  # once: between the quiet cycle's read and its write
            changed.append(PowerState.objects.filter(pk=1).update(**meanwhile))
        return real(*args, **kwargs)

    monkeypatch.setattr(cycle_input, "quiet", quiet_then_changed)
    said, sql = _cycle()
    assert changed == [1]
    assert said == "decisions=0 deferred_suspends=0 deferred_resumes=0"
    assert any(s.startswith("SAVEPOINT") for s in sql)  # the whole cycle ran
    assert _state()[:2] == (dirty, NOW)
