"""Token authentication for the API, without the ORM's query compiler.

A token (``<prefix>.<secret>``, :mod:`cluster.services.api_tokens`) is checked in one plain
statement: the row found by its indexed prefix, joined to its user, with whether it is
revoked or expired computed by the database, and the configuration's revision besides.
DRF's own ORM check cost about 0.5 ms of Python per request, a fifth of a whole job
submission. The user comes back with only the fields a request needs loaded; any other is
read from the database if touched, and a ``save()`` writes only the loaded ones (Django's
deferred-field rules).

On PostgreSQL the statement is prepared once per database session (``PREPARE``) and run
by name: planning it was 0.2 ms of the server's CPU on every request, three times its
execution (pg_stat_statements with ``track_planning``). A new session (a reconnect, a
restarted server) prepares it again. A pooler in transaction mode (pgbouncer's
``pool_mode = transaction``) would hand the name to other sessions: fsched connects to
PostgreSQL directly (docs/scaling.md).

``Authorization: Token <token>`` (what the CLI sends) and ``Authorization: Bearer <token>``
are both accepted.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, ProgrammingError, connections
from django.db.models import BooleanField
from psycopg.errors import InvalidSqlStatementName
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from cluster.models import ApiToken, ClusterConfig
from cluster.services.api_tokens import matches, split

_USER_FIELDS = {"id", "username", "is_active", "is_staff", "is_superuser"}
KEYWORDS = (b"token", b"bearer")


# The database's clock decides expiry (the one clock every server process shares), in the
# form each stores DateTimeFields in; Python's now() adapted per request cost 5 us of the 40.
# PostgreSQL's CURRENT_TIMESTAMP is its transaction's start: clock_timestamp() is now.
_NOW = {"sqlite": "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now')", "postgresql": "clock_timestamp()"}


@cache
def _query(vendor: str) -> tuple[str, tuple[Any, ...]]:
    """The statement, and the user fields it reads in the model's own order (``from_db``
    takes values in that order)."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    user = get_user_model()
    fields = tuple(f for f in user._meta.concrete_fields if f.name in _USER_FIELDS)
    column = {name: quote(ApiToken._meta.get_field(name).column) for name in ("user", "revoked", "expires")}
    columns = ", ".join(f"u.{quote(f.column)}" for f in fields)
    now = _NOW.get(vendor, "CURRENT_TIMESTAMP")
    sql = (
        f"SELECT t.{quote(ApiToken._meta.pk.column)}, t.{quote('digest')}, "  # noqa: S608 - names from model metadata
        f"t.{column['revoked']} IS NOT NULL, "
        f"(t.{column['expires']} IS NOT NULL AND t.{column['expires']} <= {now}), "
        f"({ClusterConfig.revision_sql()}), {columns} "
        f"FROM {quote(ApiToken._meta.db_table)} t "
        f"JOIN {quote(user._meta.db_table)} u ON u.{quote(user._meta.pk.column)} = t.{column['user']} "
        f"WHERE t.{quote('prefix')} = %s"
    )
    return sql, fields


PREPARED = "fsched_token_check"


def _prepared(conn: Any, cursor: Any) -> str | None:
    """The prepared statement's EXECUTE for this connection's session, prepared first if
    the session has not yet; None off PostgreSQL. Asked once the cursor is open: opening it
    runs the health check, which may have replaced a session that PostgreSQL's restart
    ended (the session is the driver's connection object: a new one knows no name)."""
    if conn.vendor != "postgresql":
        return None
    session = conn.connection
    if getattr(conn, "_fsched_token_session", None) is not session:
        sql, _fields = _query(conn.vendor)
        cursor.execute(f"PREPARE {PREPARED} (text) AS {sql.replace('%s', '$1')}")
        conn._fsched_token_session = session
    return f"EXECUTE {PREPARED} (%s)"


def _lookup(conn: Any, prefix: str) -> tuple[Any, ...] | None:
    sql, _fields = _query(conn.vendor)
    with conn.cursor() as cursor:
        prepared = _prepared(conn, cursor)
        if prepared is None:
            cursor.execute(sql, [prefix])
            return cursor.fetchone()
        try:
            cursor.execute(prepared, [prefix])
        except ProgrammingError as exc:
            # The session lost the name some other way (DISCARD ALL): the plain statement
            # answers, and the next check prepares again. Within a transaction the error
            # has spoilt it, and is the caller's.
            if not isinstance(exc.__cause__, InvalidSqlStatementName) or conn.in_atomic_block:
                raise
            conn._fsched_token_session = None
            cursor.execute(sql, [prefix])
        return cursor.fetchone()


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's class in name (drf-spectacular documents its header from it), with this
    module's check and the Bearer keyword besides."""

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        auth = authentication.get_authorization_header(request).split()
        if not auth or auth[0].lower() not in KEYWORDS:
            return None
        if len(auth) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: expected 'Token <token>'.")
        try:
            key = auth[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token header: the token is not ASCII.") from None
        return self.authenticate_credentials(key)

    def authenticate_credentials(self, key: str) -> tuple[Any, ApiToken]:
        parts = split(key)
        if parts is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        conn = connections[DEFAULT_DB_ALIAS]
        _sql, fields = _query(conn.vendor)
        row = _lookup(conn, parts[0])
        # An unknown prefix and a wrong secret answer alike: neither says which prefixes exist.
        if row is None or not matches(key, row[1]):
            raise exceptions.AuthenticationFailed("Invalid token.")
        token_id, _digest, revoked, expired, revision, *user_values = row
        # The configuration's revision came in the same round trip: the request's first
        # ClusterConfig.current() takes it instead of asking again (a round trip of every
        # API request, a third of a submission's on PostgreSQL).
        ClusterConfig.note_revision(revision)
        if revoked:
            raise exceptions.AuthenticationFailed(
                "Token revoked: log in again for a new one.", "token_revoked"
            )
        if expired:
            raise exceptions.AuthenticationFailed(
                "Token expired: log in again for a new one.", "token_expired"
            )
        # SQLite returns booleans as integers: convert, as the ORM would.
        values = [
            bool(v) if isinstance(f, BooleanField) else v for f, v in zip(fields, user_values, strict=True)
        ]
        user = get_user_model().from_db(conn.alias, [f.attname for f in fields], values)
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        token = ApiToken.from_db(conn.alias, ["id", "prefix", "user_id"], (token_id, parts[0], user.pk))
        return user, token
