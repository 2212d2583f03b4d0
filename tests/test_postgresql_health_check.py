"""The PostgreSQL health check (config/postgresql): no round trip while the server has said
nothing; a session the server ended is found and replaced before the request's first
statement."""

from __future__ import annotations

import os
import select

import psycopg
import pytest
from django.db import close_old_connections, connection, connections
from django.db.backends.postgresql import base as stock

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL"),
    pytest.mark.django_db(transaction=True),
]


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_the_backend_is_ours():
    assert type(connections["default"]).__module__ == "config.postgresql.base"


def test_an_idle_connection_is_checked_without_a_statement(monkeypatch):
    asked: list[bool] = []
    original = stock.DatabaseWrapper.is_usable

    def counting(self):
        asked.append(True)
        return original(self)

    monkeypatch.setattr(stock.DatabaseWrapper, "is_usable", counting)
    first = _backend_pid()
    for _ in range(3):
        close_old_connections()  # a request's end and the next one's start
        assert _backend_pid() == first
    assert asked == []


def test_a_session_the_server_ended_is_replaced_before_the_next_statement():
    first = _backend_pid()
    close_old_connections()
    with psycopg.connect(os.environ["FSCHED_DATABASE_URL"], autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [first])
    # The server's FATAL notice and the end of the connection reach the idle socket.
    select.select([connection.connection.fileno()], [], [], 5)
    assert _backend_pid() != first  # checked, found ended, reconnected: no error
