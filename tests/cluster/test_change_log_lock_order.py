"""A reader's trim never waits for the database's writer while holding the reader's lock.

The embedded controller stopped for good under the 10,000-node bench at the moment its
change log first passed TRIM_AT: the cycle thread polled, took the reader's lock and
waited for SQLite's write gate to trim; the agent's registration held the gate (its write
transaction) and polled the same reader from inside it (a kept value), waiting for that
lock.  Here the two threads meet in exactly that order: the gate holder must get its poll
(the trim then runs after the lock is let go).  The gate is this test's own, so a
deadlocked old code leaves only this test's threads stuck.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time

import pytest
from django.db import connection, connections

from cluster.models import Partition
from cluster.services import change_log, change_log_entries
from config.sqlite import base as sqlite_base

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(bool(os.environ.get("FSCHED_DATABASE_URL")), reason="the test database is PostgreSQL"),
]


@pytest.fixture
def other():
    assert change_log.install(force=True)
    name = connection.settings_dict["NAME"]
    conn = sqlite3.connect(name, uri=name.startswith("file:"), isolation_level=None, timeout=10)
    yield conn
    conn.close()
    change_log.uninstall()


def _waiting_at_gate(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "acquire" and frame.f_code.co_filename == sqlite_base.__file__:
            return True
        frame = frame.f_back
    return False


def test_a_writer_inside_its_transaction_gets_its_poll_while_another_reader_trims(other, monkeypatch):
    gate = sqlite_base._Gate()
    monkeypatch.setattr(sqlite_base, "_WRITE_GATE", gate)
    monkeypatch.setattr(change_log_entries, "TRIM_AT", 3)
    monkeypatch.setattr(change_log_entries, "KEEP", 1)
    reader = change_log.Reader()
    reader.poll()  # its place: the end of the log
    for i in range(5):
        Partition.objects.create(name=f"p{i}", nodes="")

    holder_has_gate = threading.Event()
    trimmer_waits = threading.Event()
    results: dict[str, object] = {}

    def holder() -> None:  # the registration: inside its write transaction, then a kept value
        try:
            gate.acquire()
            holder_has_gate.set()
            trimmer_waits.wait()
            results["holder"] = reader.poll()
            gate.release()
        finally:
            connections.close_all()

    def trimmer() -> None:  # the cycle thread's kept value, with a trim due
        try:
            holder_has_gate.wait()
            results["trimmer"] = reader.poll()
        finally:
            connections.close_all()

    a = threading.Thread(target=holder, daemon=True)
    b = threading.Thread(target=trimmer, daemon=True)
    a.start()
    b.start()
    for _ in range(2000):  # until the trimmer stands at the gate (or is done)
        if _waiting_at_gate(b) or not b.is_alive():
            break
        time.sleep(0.005)
    assert _waiting_at_gate(b), "the trimmer never reached the write gate"
    trimmer_waits.set()
    a.join(30)
    assert not a.is_alive(), "deadlock: the gate holder waits for the reader's lock"
    b.join(30)
    assert not b.is_alive()
    assert {"cluster_partition"} <= set(results["trimmer"].tables)  # type: ignore[union-attr]
    # Trimmed, once the gate was free, down to the newest KEEP entries.
    (left,) = other.execute('SELECT count(*) FROM "fsched_change"').fetchone()
    assert left == 1
