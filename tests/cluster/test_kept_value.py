"""pass_snapshot.kept_value: a value kept between passes until its tables are written.

What other parts of a pass keep with it (the HRES state, the limits' policy) is exact only
if every write to its tables, and every rollback, makes the next call compute again; and
outside ``keep()`` nothing is kept.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone

from cluster.models import Event, Partition
from cluster.services import pass_snapshot

pytestmark = pytest.mark.django_db(transaction=True)


class Counted:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return sorted(Partition.objects.values_list("name", flat=True))


def _partition(name):
    return Partition.objects.create(name=name, nodes="")


def test_kept_until_its_table_is_written():
    compute = Counted()
    with pass_snapshot.keep():
        assert pass_snapshot.kept_value("t", (Partition,), compute) == []
        assert pass_snapshot.kept_value("t", (Partition,), compute) == []
        assert compute.calls == 1
        Event.objects.create(time=timezone.now(), kind="node", reason="a table the value does not read")
        pass_snapshot.kept_value("t", (Partition,), compute)
        assert compute.calls == 1
        _partition("a")
        assert pass_snapshot.kept_value("t", (Partition,), compute) == ["a"]
        assert compute.calls == 2
        Partition.objects.filter(name="a").update(name="b")
        assert pass_snapshot.kept_value("t", (Partition,), compute) == ["b"]
        with connection.cursor() as cursor:  # raw SQL counts as well
            cursor.execute('DELETE FROM "cluster_partition"')
        assert pass_snapshot.kept_value("t", (Partition,), compute) == []
        assert compute.calls == 4


def test_a_rollback_makes_it_compute_again():
    compute = Counted()
    with pass_snapshot.keep():
        pass_snapshot.kept_value("t", (Partition,), compute)
        with pytest.raises(RuntimeError), transaction.atomic():
            # Read inside a transaction that is then undone: must not stay.
            _partition("gone")
            assert pass_snapshot.kept_value("t", (Partition,), compute) == ["gone"]
            raise RuntimeError
        assert pass_snapshot.kept_value("t", (Partition,), compute) == []
        assert compute.calls == 3


def test_nothing_kept_outside_keep():
    compute = Counted()
    pass_snapshot.kept_value("t", (Partition,), compute)
    pass_snapshot.kept_value("t", (Partition,), compute)
    assert compute.calls == 2
    with pass_snapshot.keep():
        pass_snapshot.kept_value("t", (Partition,), compute)
    with pass_snapshot.keep():  # a new keep() starts empty
        pass_snapshot.kept_value("t", (Partition,), compute)
    assert compute.calls == 4


def test_a_write_to_another_table_named_without_quotes_keeps_it():
    # The simulator's temp tables are written unquoted, with their schema: counted by name,
    # not as a statement that could write anything (which dropped every kept value).
    compute = Counted()
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE IF NOT EXISTS kept_probe (name TEXT)")
    with pass_snapshot.keep():
        pass_snapshot.kept_value("t", (Partition,), compute)
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO temp.kept_probe (name) VALUES ('x')")
            cursor.execute("DELETE FROM temp.kept_probe")
        pass_snapshot.kept_value("t", (Partition,), compute)
        assert compute.calls == 1
        with connection.cursor() as cursor:
            cursor.execute("UPDATE cluster_partition SET state = 'UP'")  # unquoted, still seen
        pass_snapshot.kept_value("t", (Partition,), compute)
        assert compute.calls == 2


def test_a_value_of_some_fields_is_kept_through_updates_of_the_others():
    # ``fields``: only a write that may change those columns, or add or remove a row,
    # computes it again (the HRES node names, kept through the nodes' state writes).
    compute = Counted()

    def names():
        return pass_snapshot.kept_value("t", (Partition,), compute, fields=("name",))

    _partition("a")
    with pass_snapshot.keep():
        assert names() == ["a"]
        Partition.objects.filter(name="a").update(state="DOWN", max_time=5)
        part = Partition.objects.get(name="a")
        part.priority_tier = 3
        part.save(update_fields=["priority_tier"])
        assert names() == ["a"]
        assert compute.calls == 1
        Partition.objects.filter(name="a").update(name="b")
        assert names() == ["b"]
        _partition("c")
        assert names() == ["b", "c"]
        Partition.objects.filter(name="c").delete()
        assert names() == ["b"]
        assert compute.calls == 4
        with connection.cursor() as cursor:  # a statement not read column by column
            cursor.execute("UPDATE cluster_partition SET state = 'UP'")
        names()
        assert compute.calls == 5
        with pytest.raises(RuntimeError), transaction.atomic():
            Partition.objects.filter(name="b").update(state="DOWN")
            raise RuntimeError
        names()
        assert compute.calls == 6  # a rollback forgets every value
