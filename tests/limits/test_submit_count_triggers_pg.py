"""The submit limits' counts on PostgreSQL (limits/submit_counts.py), where writers commit
in any order: every route of writes keeps them exact, two writers ending and starting jobs
of several keys in opposite orders never wait for each other (counter rows updated in
place would deadlock them), a compaction beside open writers loses none of their rows,
and a TRUNCATE (a test's flush) leaves no count behind.

The other processes are plain psycopg connections to the test database."""

from __future__ import annotations

import os
import random
import threading

import psycopg
import pytest
from django.db import connection

from cluster.models import Job
from limits import submit_counts
from tests.limits.submit_count_steps import assert_counts_exact, steps

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL"),
    pytest.mark.django_db(transaction=True),
]

INSERT = (
    "INSERT INTO cluster_job (id, \"user\", account, partition, qos, state, submit_time, {rest}) "
    "VALUES (%s, %s, 'acct', 'debug', %s, %s, now(), {values})"
)


def _connect() -> psycopg.Connection:
    params = {
        k: v for k, v in connection.get_connection_params().items() if k not in ("cursor_factory", "context")
    }
    return psycopg.connect(**params, autocommit=True)


def _insert(conn: psycopg.Connection, job_id: int, user: str, qos: str, state: str) -> None:
    # Every NOT NULL column without a database default, from the model's own defaults.
    rest = [
        f for f in Job._meta.concrete_fields
        if f.column not in ("id", "user", "account", "partition", "qos", "state", "submit_time")
        and not f.null and f.has_default()
    ]  # fmt: skip
    values = []
    for f in rest:
        v = f.get_default()
        values.append(psycopg.types.json.Jsonb(v) if isinstance(v, (dict, list)) else v)
    sql = INSERT.format(rest=", ".join(f'"{f.column}"' for f in rest), values=", ".join(["%s"] * len(rest)))
    conn.execute(sql, [job_id, user, qos, state, *values])


@pytest.mark.parametrize("seed", range(2))
def test_counts_equal_a_recount_after_every_write(seed):
    rng = random.Random(seed)
    todo = steps(rng)
    for _ in range(80):
        rng.choice(todo)()
        assert_counts_exact()


def test_writers_in_opposite_orders_and_a_compaction_beside_them():
    first, second = _connect(), _connect()
    try:
        for i, (user, qos) in enumerate([("a", "q1"), ("b", "q2"), ("a", "q1"), ("b", "q2"), ("a", "q2")], 1):
            _insert(first, i, user, qos, "RUNNING")
        done = threading.Event()
        with first.transaction(), second.transaction():
            # The first writer ends a job of key (a, q1), the second one of (b, q2); then each
            # ends a job of the other's key.  Counter rows updated in place would deadlock.
            first.execute("UPDATE cluster_job SET state = 'COMPLETED' WHERE id = 1")
            second.execute("UPDATE cluster_job SET state = 'COMPLETED' WHERE id = 2")

            def cross() -> None:
                second.execute("UPDATE cluster_job SET state = 'CANCELLED' WHERE id = 3")
                done.set()

            worker = threading.Thread(target=cross)
            worker.start()
            worker.join(timeout=30)
            assert done.is_set(), "a writer waited for another's counter row"
            first.execute("UPDATE cluster_job SET state = 'CANCELLED' WHERE id = 4")
            first.execute("UPDATE cluster_job SET qos = 'q9' WHERE id = 5")
            _insert(first, 6, "c", "q1", "PENDING")
            # A compaction while both writers' rows are uncommitted: it may only fold the
            # rows it can see, and must lose none of the others.
            assert submit_counts.compact() is True
        assert_counts_exact()
        assert submit_counts.counts() == {("a", "acct", "debug", "q9"): 1, ("c", "acct", "debug", "q1"): 1}
    finally:
        first.close()
        second.close()


def test_a_truncate_leaves_no_count():
    other = _connect()
    try:
        for i in range(1, 4):
            _insert(other, i, "a", "q1", "PENDING")
        assert submit_counts.counts() == {("a", "acct", "debug", "q1"): 3}
        other.execute("TRUNCATE cluster_job CASCADE")
        assert submit_counts.counts() == {}
        assert_counts_exact()
    finally:
        other.close()
