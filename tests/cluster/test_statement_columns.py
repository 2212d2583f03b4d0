"""statement_effects.columns_set: the columns an UPDATE sets, read from its text, for the
values kept until one of the columns they read is written (pass_snapshot.kept_value's
``fields``).  Never short: whatever is not read as plain assignments is None (any column)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F

from cluster.models import Node
from cluster.services.statement_effects import columns_set

pytestmark = pytest.mark.django_db


def _updates(write) -> list[str]:
    """The UPDATE statements ``write`` runs, as the backend runs them (with placeholders)."""
    seen = []

    def record(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        write()
    return [sql for sql in seen if sql.lstrip().upper().startswith("UPDATE")]


def test_the_orm_updates_name_their_columns() -> None:
    node = Node.objects.create(name="n1")
    for write, columns in (
        (
            lambda: Node.objects.filter(name="n1").update(alloc_cpus=4, base_state="MIXED"),
            {"alloc_cpus", "base_state"},
        ),
        (lambda: Node.objects.filter(pk__in=[node.pk, 2]).update(weight=F("weight") + 1), {"weight"}),
        (lambda: node.save(update_fields=["cpus", "features"]), {"cpus", "features"}),
    ):
        found = _updates(write)
        assert found
        for sql in found:
            assert columns_set(sql) == frozenset(columns)
    everything = _updates(node.save)
    assert columns_set(everything[0]) >= {"name", "cpus", "base_state"}


@pytest.mark.parametrize(
    ("sql", "columns"),
    [
        (
            'UPDATE "cluster_node" SET "alloc_cpus" = %s, "flags" = %s WHERE "id" = %s',
            {"alloc_cpus", "flags"},
        ),
        ("update cluster_node set weight = weight + %s where id = %s", {"weight"}),
        ('UPDATE "cluster_node" SET "weight" = COALESCE("weight", %s), "cpus" = %s', {"weight", "cpus"}),
        ('UPDATE "cluster_node" SET "cpus" = %s RETURNING "id"', {"cpus"}),
    ],
)
def test_plain_assignments_are_read(sql, columns) -> None:
    assert columns_set(sql) == frozenset(columns)


@pytest.mark.parametrize(
    "sql",
    [
        'INSERT INTO "cluster_node" ("name") VALUES (%s)',
        'DELETE FROM "cluster_node" WHERE "id" = %s',
        "UPDATE cluster_node SET state = 'UP'",  # a literal could hide a keyword
        'UPDATE "cluster_node" SET ("name", "cpus") = (%s, %s)',  # a row value
        'UPDATE "cluster_node" SET "cpus" = (SELECT MAX("cpus") FROM "cluster_node")',
        'UPDATE "cluster_node" SET "cpus" = %s FROM "cluster_job" WHERE "cluster_job"."id" = %s',
        'UPDATE OR REPLACE "cluster_node" SET "cpus" = %s',  # deletes the rows it collides with
        'UPDATE "cluster_node" SET "cluster_node"."name" = %s',
        "SELECT 1",
        "CREATE TABLE x (a INT)",
    ],
)
def test_anything_else_is_any_column(sql) -> None:
    assert columns_set(sql) is None
