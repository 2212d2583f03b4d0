"""The change log on PostgreSQL (cluster/services/change_log_pg.py): writers commit in any
order, and the live kept snapshot (distributed mode's passes) still sees every write.

The other processes are plain psycopg connections to the test database, which Django's
statement watch never sees, as it never sees another server process's.
"""

from __future__ import annotations

import os
import random

import psycopg
import pytest
from django.db import connection, transaction

from cluster.models import Node, Partition
from cluster.services import change_log, change_log_entries, pass_snapshot
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from tests.cluster.snapshot_checks import assert_kept_equals_fresh, foreign_writes, register

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL"),
    pytest.mark.django_db(transaction=True),
]

NODES = [f"node{i:02d}" for i in range(1, 17)]


def _connect():
    params = {
        k: v for k, v in connection.get_connection_params().items() if k not in ("cursor_factory", "context")
    }
    return psycopg.connect(**params, autocommit=True)


@pytest.fixture
def others():
    assert change_log.install()  # after every migrate already; again is harmless
    conns = [_connect(), _connect()]
    yield conns
    for conn in conns:
        conn.close()


_assert_same = assert_kept_equals_fresh


def test_a_write_committed_after_a_later_one_was_seen_is_not_missed(others):
    first, second = others
    p1 = Partition.objects.create(name="p1", nodes="")
    p2 = Partition.objects.create(name="p2", nodes="")
    reader = change_log.Reader()
    assert reader.poll().everything
    with first.transaction():
        # The first writer's entry gets the smaller id, but commits last.
        first.execute("UPDATE cluster_partition SET priority_tier = 5 WHERE id = %s", (p1.id,))
        second.execute("UPDATE cluster_partition SET priority_tier = 6 WHERE id = %s", (p2.id,))
        assert reader.poll().tables == {"cluster_partition": {p2.id}}
    assert p1.id in reader.poll().tables["cluster_partition"]


def test_a_trimmed_log_makes_a_late_reader_start_again(others, monkeypatch):
    monkeypatch.setattr(change_log_entries, "TRIM_AT", 3)
    monkeypatch.setattr(change_log_entries, "KEEP", 1)
    late, trimmer = change_log.Reader(), change_log.Reader()
    late.poll()
    trimmer.poll()
    for name in ("a", "b", "c", "d", "e"):
        Partition.objects.create(name=name, nodes="")
    trimmer.poll()
    assert late.poll().everything


def _register():
    register(NODES)


@pytest.mark.parametrize("seed", [1, 2])
def test_live_kept_snapshot_sees_other_processes_writes(demo, users, others, seed):
    rng = random.Random(seed)
    first, second = others
    alice = users["alice"]
    _register()
    with pass_snapshot.keep(live=True):
        _assert_same()
        open_tx = None

        def submit():
            job_submit(user=alice, spec={"wrap": "true", "work_dir": "/tmp", "partition": "debug"})

        def slow_writer():
            # A transaction that writes now and commits a few steps later (a row no other
            # step writes: they would wait for it).
            nonlocal open_tx
            if open_tx is None:
                open_tx = first.transaction()
                open_tx.__enter__()
                tier = rng.randint(1, 9)
                first.execute("UPDATE cluster_partition SET priority_tier = %s WHERE name = 'long'", (tier,))
            else:
                open_tx.__exit__(None, None, None)
                open_tx = None

        def rolled_back():
            with transaction.atomic():
                Node.objects.filter(name=rng.choice(NODES)).update(weight=77)
                _assert_same()
                transaction.set_rollback(True)

        node_weight, job_ended, queued_job = foreign_writes(rng, second.execute, NODES, "%s")
        steps = [
            submit,
            submit,
            schedule_pass,
            node_weight,
            job_ended,
            queued_job,
            slow_writer,
            rolled_back,
        ]
        for _ in range(50):
            rng.choice(steps)()
            _assert_same()
        if open_tx is not None:
            open_tx.__exit__(None, None, None)
        _assert_same()
