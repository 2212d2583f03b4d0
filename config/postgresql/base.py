"""PostgreSQL tuned for the controller's statements: its health check costs no round trip
while nothing has come from the server, and psycopg keeps its parse of a submission.

``CONN_HEALTH_CHECKS`` makes Django run ``SELECT 1`` before the first statement of every
request and agent message: on distributed mode's submission path it was one round trip
in four. A server that restarts or ends a session (``pg_terminate_backend``, a failover)
sends its FATAL notice and closes the connection, which leaves the idle socket readable.
So the socket is looked at first, without waiting: nothing readable, and the connection
is as usable as the last answer left it; something there (that notice, the end of the
connection, or a notification), and ``SELECT 1`` decides, as Django's own check would.

A connection cut with no word from the server (a cable pulled) fails at its next
statement instead, as it would between Django's check and that statement anyway: the
API answers 503 and the agents' messages are retried (``cluster/unavailable.py``,
``cluster/consumers.py``).

psycopg parses a statement's placeholders on every execute unless it has at most 50
parameters; a kept parse lives in a 128-entry LRU keyed by the statement's text. A
submission's message (``cluster.services.rows.insert_together``) has 78 (69 of the job, 9
of its event), and its parse was half of the time the statement took in the server: the
limit is raised to 128, room for the job's fields to come. The controller's statements are
a few shapes, and the cache takes none over 4 kB, so memory stays bounded. A name psycopg
no longer has is left alone: only speed depends on it.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import _queries as psycopg_queries

from config.rollbacks import RollbackListeners

PARSE_CACHE_PARAMS = 128
if getattr(psycopg_queries, "MAX_CACHED_STATEMENT_PARAMS", PARSE_CACHE_PARAMS) < PARSE_CACHE_PARAMS:
    psycopg_queries.MAX_CACHED_STATEMENT_PARAMS = PARSE_CACHE_PARAMS


class DatabaseWrapper(RollbackListeners, base.DatabaseWrapper):
    def is_usable(self) -> bool:
        conn = self.connection
        if conn is None or conn.closed or getattr(conn, "broken", False):
            return False
        try:
            readable, _, _ = select.select([conn.fileno()], [], [], 0)
        except (OSError, ValueError):  # the socket is gone
            return False
        return not readable or super().is_usable()
