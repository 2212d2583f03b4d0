"""pass_snapshot.kept_rows: rows of a table kept between passes, brought up to date by
reading again only the rows written since (#18: the holding jobs with licenses, read by
every pass and after every instant of the simulator).

An oracle: random writes of every kind (by key, by another column, of a column the rows
do not read, inserts, deletes, raw SQL, rolled-back transactions) and after each the kept
rows equal a fresh read.  And a count: a write by key reads that row alone, a write of
columns the rows do not read reads nothing."""

from __future__ import annotations

import random

import pytest
from django.db import connection, transaction

from cluster.models import Partition
from cluster.services import pass_snapshot, rows, snapshot_rows

pytestmark = pytest.mark.django_db(transaction=True)

FIELDS = ("id", "name", "max_time")
WHERE = {"state": "UP"}


def _kept():
    return pass_snapshot.kept_rows("t", Partition, FIELDS, WHERE)


def _fresh():
    return rows.select(Partition, FIELDS, WHERE, order_by=("id",))


def _step(rng):
    ids = list(Partition.objects.values_list("id", flat=True))
    pick = rng.choice(ids) if ids else None
    kind = rng.randrange(9)
    if kind == 0 or pick is None:
        Partition.objects.create(name=f"p{rng.randrange(10**6)}", nodes="", state=rng.choice(["UP", "DOWN"]))
    elif kind == 1:
        Partition.objects.filter(pk=pick).update(state=rng.choice(["UP", "DOWN", "DRAIN"]))
    elif kind == 2:
        Partition.objects.filter(pk=pick).update(max_time=rng.randrange(100))
    elif kind == 3:
        Partition.objects.filter(pk=pick).update(priority_tier=rng.randrange(5))  # not read
    elif kind == 4:
        Partition.objects.filter(state="DOWN").update(state="UP")
    elif kind == 5:
        Partition.objects.filter(pk=pick).delete()
    elif kind == 6:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE cluster_partition SET max_time = 7 WHERE max_time > 50")
    elif kind == 7:
        with pytest.raises(RuntimeError), transaction.atomic():
            Partition.objects.filter(pk=pick).update(state="DOWN", max_time=1)
            assert _kept() == _fresh()
            raise RuntimeError
    else:
        part = Partition.objects.get(pk=pick)
        part.name = f"r{rng.randrange(10**6)}"
        part.save()


@pytest.mark.parametrize("seed", range(4))
def test_kept_rows_equal_a_fresh_read(seed):
    rng = random.Random(seed)
    with pass_snapshot.keep():
        for _ in range(60):
            _step(rng)
            assert _kept() == _fresh()


def test_only_the_rows_written_are_read_again(monkeypatch):
    for name in ("a", "b", "c"):
        Partition.objects.create(name=name, nodes="")
    read = []
    select, select_in = rows.select, snapshot_rows.select_in

    def counted_select(model, fields, where=None, **kwargs):
        if "pk" not in where:  # select_in's by key are counted below
            read.append(("all", None))
        return select(model, fields, where, **kwargs)

    def counted_in(model, fields, keys, where=None):
        read.append(("some", len(set(keys))))
        return select_in(model, fields, keys, where)

    with pass_snapshot.keep():
        first = _kept()
        monkeypatch.setattr(pass_snapshot.rows, "select", counted_select)
        monkeypatch.setattr(pass_snapshot, "select_in", counted_in)
        b = Partition.objects.get(name="b")
        Partition.objects.filter(pk=b.pk).update(priority_tier=4)  # a column not read
        assert _kept() is first
        assert read == []
        Partition.objects.filter(pk=b.pk).update(max_time=9)
        assert [row[2] for row in _kept()] == [None, 9, None]
        assert read == [("some", 1)]
        Partition.objects.filter(max_time=9).update(max_time=10)  # rows it does not name
        _kept()
        assert read == [("some", 1), ("all", None)]
    monkeypatch.undo()
    assert _kept() == _fresh()  # outside keep(): read every time


def test_the_rows_written_are_put_in_place_not_every_key_sorted(monkeypatch):
    """After a write of one row among hundreds, the kept list is the last one edited at
    that key: the keys sorted are those written, not every one kept."""
    Partition.objects.bulk_create([Partition(name=f"p{i:03d}", nodes="") for i in range(300)])
    sorted_keys = []

    def counted(keys, **kwargs):
        keys = list(keys)
        sorted_keys.append(len(keys))
        return sorted(keys, **kwargs)

    with pass_snapshot.keep():
        first = _kept()
        monkeypatch.setattr(pass_snapshot, "sorted", counted, raising=False)
        ids = [row[0] for row in first]
        Partition.objects.filter(pk=ids[150]).update(max_time=9)
        Partition.objects.filter(pk=ids[20]).update(state="DOWN")  # leaves the rows
        got = _kept()
    monkeypatch.undo()
    assert got == _fresh() and got is not first
    assert sorted_keys and max(sorted_keys) <= 2, sorted_keys
