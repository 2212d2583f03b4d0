"""The database's own log of every process's writes (cluster.services.change_log), and the
live kept snapshot it allows (pass_snapshot.keep(live=True), the embedded controller's).

The other process is a plain sqlite3 connection to the same database (the test database is
an in-memory one shared by name): Django's statement watch never sees its statements, as
it never sees an HTTP helper process's.  After each of its writes and each of this
process's services, the kept snapshot equals a fresh read; without the log it keeps the
old rows.
"""

from __future__ import annotations

import os
import random
import sqlite3

import pytest
from django.db import connection, transaction

from cluster.models import Job, Node, Partition
from cluster.services import change_log, change_log_entries, pass_snapshot
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from tests.cluster.snapshot_checks import assert_kept_equals_fresh, foreign_writes, register

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # PostgreSQL's log: test_change_log_pg.py.
    pytest.mark.skipif(bool(os.environ.get("FSCHED_DATABASE_URL")), reason="the test database is PostgreSQL"),
]

NODES = [f"node{i:02d}" for i in range(1, 17)]


@pytest.fixture
def other():
    """Another writer of the same database, outside Django."""
    assert change_log.install(force=True)
    name = connection.settings_dict["NAME"]
    conn = sqlite3.connect(name, uri=name.startswith("file:"), isolation_level=None, timeout=10)
    yield conn
    conn.close()
    change_log.uninstall()  # the test database outlives the test


_assert_same = assert_kept_equals_fresh


def _register():
    register(NODES)


def test_every_write_is_logged_with_its_row(other):
    reader = change_log.Reader()
    assert reader.poll().everything  # the first look: where the log ends
    part = Partition.objects.create(name="p1", nodes="")
    other.execute("UPDATE cluster_partition SET state = 'DOWN' WHERE id = ?", (part.id,))
    found = reader.poll()
    assert not found.everything
    assert found.tables == {"cluster_partition": {part.id}}
    assert reader.poll().tables == {}
    other.execute("DELETE FROM cluster_partition")
    assert reader.poll().tables == {"cluster_partition": {part.id}}


def test_a_rollback_or_a_trimmed_log_makes_the_reader_start_again(other, monkeypatch):
    reader = change_log.Reader()
    reader.poll()
    with transaction.atomic():
        Partition.objects.create(name="gone", nodes="")
        assert reader.poll().tables  # its own uncommitted entry
        transaction.set_rollback(True)
    # The rolled-back entry's id is handed out again to the next write: the reader that
    # saw it cannot trust its place (pass_snapshot.forget restarts it on every rollback).
    reader.restart()
    assert reader.poll().everything
    monkeypatch.setattr(change_log_entries, "TRIM_AT", 3)
    monkeypatch.setattr(change_log_entries, "KEEP", 1)
    late = change_log.Reader()
    late.poll()
    for name in ("a", "b", "c", "d"):
        Partition.objects.create(name=name, nodes="")
    reader.poll()  # trims: keeps the newest entry only
    assert late.poll().everything  # entries it never saw are gone


@pytest.mark.parametrize("seed", [1, 2])
def test_live_kept_snapshot_sees_another_process_writes(demo, users, other, seed):
    rng = random.Random(seed)
    alice = users["alice"]
    with pass_snapshot.keep(live=True):
        _register()
        _assert_same()

        def submit():
            spec = {"wrap": "true", "work_dir": "/tmp", "partition": rng.choice(["debug", "batch"])}
            job_submit(user=alice, spec=spec)

        def foreign_drain():
            other.execute("UPDATE cluster_node SET flags = flags | 1 WHERE name = ?", (rng.choice(NODES),))

        def foreign_limit():
            other.execute(
                "UPDATE cluster_job SET time_limit = ? WHERE state = 'RUNNING'", (rng.choice([7, 9]),)
            )

        def foreign_partition():
            other.execute("UPDATE cluster_partition SET priority_tier = ?", (rng.choice([1, 2]),))

        node_weight, job_ended, queued_job = foreign_writes(rng, other.execute, NODES, "?")
        steps = [
            submit,
            submit,
            schedule_pass,
            node_weight,
            foreign_drain,
            job_ended,
            queued_job,
            foreign_limit,
            foreign_partition,
        ]
        for _ in range(60):
            rng.choice(steps)()
            _assert_same()
        assert Job.objects.filter(state="COMPLETED").exists()


def test_live_kept_value_sees_another_process_writes(demo, other):
    calls = []

    def weights():
        calls.append(1)
        return sorted(Node.objects.values_list("name", "weight"))

    _register()
    with pass_snapshot.keep(live=True):
        before = pass_snapshot.kept_value("n", (Node,), weights)
        assert pass_snapshot.kept_value("n", (Node,), weights) == before
        assert len(calls) == 1
        other.execute("UPDATE cluster_node SET weight = 99 WHERE name = 'node01'")
        assert ("node01", 99) in pass_snapshot.kept_value("n", (Node,), weights)
        assert len(calls) == 2


def test_nothing_kept_live_without_the_log():
    # PostgreSQL, or an SQLite database without the log: keep(live=True) keeps nothing.
    change_log.uninstall()
    with pass_snapshot.keep(live=True):
        calls = []
        pass_snapshot.kept_value("n", (Node,), lambda: calls.append(1))
        pass_snapshot.kept_value("n", (Node,), lambda: calls.append(1))
        assert len(calls) == 2
