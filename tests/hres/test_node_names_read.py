"""The node names HRES reads again after every node write (hres.services._read_node_names)
come back as the same tuple while they are the same names, so that the kept states are
found by identity instead of comparing 10,000 names at every submission."""

from __future__ import annotations

import pytest

from cluster.models import Node
from cluster.services import pass_snapshot
from hres import services

pytestmark = pytest.mark.django_db


def test_the_same_names_are_the_same_tuple_and_new_names_a_new_one() -> None:
    for name in ("n2", "n1", "n3"):
        Node.objects.create(name=name)
    with pass_snapshot.keep():
        first = services._node_names()
        assert first == ("n1", "n2", "n3")
        Node.objects.filter(name="n2").update(cpus=8)  # a write: read again, the same names
        again = services._node_names()
        assert again is first
        Node.objects.create(name="n0")
        grown = services._node_names()
        assert grown == ("n0", "n1", "n2", "n3") and grown is not first
        Node.objects.filter(name="n0").delete()
        assert services._node_names() == first


def test_node_writes_that_keep_the_names_do_not_read_them_again(monkeypatch) -> None:
    # The simulator's log asks for the HRES view after every instant, and every start and
    # end writes its nodes' state: the 10,000 names were read again each time (#18).
    for name in ("n1", "n2"):
        Node.objects.create(name=name)
    reads = []

    def counted():
        reads.append(1)
        return read()

    read = services._read_node_names
    monkeypatch.setattr(services, "_read_node_names", counted)
    with pass_snapshot.keep():
        first = services._node_names()
        Node.objects.filter(name="n1").update(alloc_cpus=4, base_state="MIXED", flags=0)
        node = Node.objects.get(name="n2")
        node.cpus = 8
        node.save(update_fields=["cpus"])
        assert services._node_names() is first
        assert len(reads) == 1
        Node.objects.filter(name="n2").update(name="n3")  # renamed: read again
        assert services._node_names() == ("n1", "n3")
        assert len(reads) == 2
        node = Node.objects.get(name="n3")
        node.save()  # a save of every column sets the name too: read again
        assert services._node_names() == ("n1", "n3")
        assert len(reads) == 3
