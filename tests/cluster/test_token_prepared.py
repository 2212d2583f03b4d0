"""The API's token check on PostgreSQL runs as a statement prepared once per session
(#11 point 4): its planning was 0.2 ms of PostgreSQL's CPU on every request. A new
session (a reconnect) prepares it again, and the answers are those of the plain one."""

from __future__ import annotations

import os
import time

import psycopg
import pytest
from django.db import close_old_connections, connection
from django.test.utils import CaptureQueriesContext
from rest_framework import exceptions

from cluster.api.auth import PREPARED, TokenAuthentication
from cluster.models import ClusterConfig
from cluster.services.api_tokens import token_issue, token_revoke

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL"),
    pytest.mark.django_db(transaction=True),
]


def _check(text: str) -> tuple[list[str], object]:
    with CaptureQueriesContext(connection) as queries:
        user, _token = TokenAuthentication().authenticate_credentials(text)
    return [q["sql"] for q in queries.captured_queries], user


def _prepared_here() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements WHERE name = %s", [PREPARED])
        return [row[0] for row in cursor.fetchall()]


def test_the_token_check_is_prepared_once_per_session(demo, users):
    _token, text = token_issue(users["alice"])
    ClusterConfig.current()  # the configuration cached: below, only its revision is asked
    connection.close()  # a session of its own: another test's may have prepared it already
    first, user = _check(text)
    assert user.username == "alice"
    assert first[0].startswith(f"PREPARE {PREPARED} (text) AS SELECT"), first
    assert _prepared_here() == [PREPARED]
    for _ in range(2):
        again, user = _check(text)
        assert again == [f"EXECUTE {PREPARED} ('{text.split('.')[0]}')"] and user.username == "alice"
    # The revision still rides on it: the request's configuration read costs nothing more.
    with CaptureQueriesContext(connection) as queries:
        ClusterConfig.current()
    assert queries.captured_queries == []
    connection.close()  # a new session knows no prepared statement: it prepares again
    after, user = _check(text)
    assert after[0].startswith(f"PREPARE {PREPARED}") and user.username == "alice"


def test_the_prepared_check_refuses_what_the_plain_one_refused(demo, users):
    token, text = token_issue(users["bob"])
    _check(text)
    with pytest.raises(exceptions.AuthenticationFailed, match="Invalid token"):
        TokenAuthentication().authenticate_credentials(text[:-1] + ("0" if text[-1] != "0" else "1"))
    with pytest.raises(exceptions.AuthenticationFailed, match="Invalid token"):
        TokenAuthentication().authenticate_credentials("nosuchprefix.secret")
    token_revoke(token.prefix)
    with pytest.raises(exceptions.AuthenticationFailed, match="revoked"):
        TokenAuthentication().authenticate_credentials(text)


def test_a_session_ended_by_the_server_is_replaced_and_prepares_again(demo, users, settings):
    # PostgreSQL's restart ends every session: the request's health check replaces it, and
    # the new session knows no prepared statement (it was a 500 in the crash test).
    settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    connection.settings_dict["CONN_HEALTH_CHECKS"] = True
    _token, text = token_issue(users["alice"])
    _check(text)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    with psycopg.connect(os.environ["FSCHED_DATABASE_URL"], autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    time.sleep(0.2)
    close_old_connections()  # a request's end: the next one checks the connection's health
    sql, user = _check(text)
    assert user.username == "alice" and sql[0].startswith(f"PREPARE {PREPARED}"), sql


def test_a_session_that_lost_the_name_still_answers(demo, users):
    _token, text = token_issue(users["alice"])
    _check(text)
    with connection.cursor() as cursor:
        cursor.execute(f"DEALLOCATE {PREPARED}")
    sql, user = _check(text)
    assert user.username == "alice"
    assert sql[0].startswith("EXECUTE") and "SELECT" in sql[1], sql  # the plain statement
    again, _user = _check(text)
    assert again[0].startswith(f"PREPARE {PREPARED}"), again
