"""The power extension's hooks lock nodes by name, the one order of docs/locking.md: inside
the scheduler's pass (jobs_allocated) and a completion (nodes_freed) they lock sets of nodes
that another writer may be locking at the same time, and two sets taken in different orders
can deadlock on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from power import services

pytestmark = pytest.mark.django_db


def _node_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if 'FROM "cluster_node"' in q["sql"]]


@pytest.mark.parametrize(
    "call",
    [
        lambda now: services.jobs_allocated({1: ["node03", "node01", "node02"]}, now=now),
        lambda now: services.nodes_freed({"node03": {"debug"}, "node01": {"debug"}}, now=now),
    ],
    ids=["jobs_allocated", "nodes_freed"],
)
def test_nodes_are_read_for_update_in_name_order(demo, call) -> None:
    with CaptureQueriesContext(connection) as queries:
        call(timezone.now())
    reads = _node_reads(queries)
    assert reads, "the hook read no node"
    for sql in reads:
        assert 'ORDER BY "cluster_node"."name"' in sql or 'ORDER BY "name"' in sql, sql
