"""The node grid's cost per node (#15's benchmark: the grid at 10,000 nodes).

What a render does that grows with the cluster must be the one read of the nodes and the
writing of each tile, nothing else: the same number of queries, of template variable
lookups and of state-word derivations for 10 nodes as for 200.  No timing is asserted;
these counts are what made the grid take over a second at 10,000 nodes.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.template import base as template_base
from django.test.utils import CaptureQueriesContext

from cluster import selectors
from cluster.core import states
from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node, Partition

pytestmark = pytest.mark.django_db

GRIDS = ["/nodes/", "/nodes/_grid", "/nodes/?group=partition", "/nodes/?partition=odd", "/_grid"]

# A few (base state, flags) pairs, each with its own tile look; reasons on some.
LOOKS = [
    (NodeBase.IDLE, 0, ""),
    (NodeBase.MIXED, 0, ""),
    (NodeBase.IDLE, NodeFlag.DRAIN, "bad fan"),
    (NodeBase.DOWN, NodeFlag.NOT_RESPONDING, "Not responding"),
    (NodeBase.IDLE, NodeFlag.POWERED_DOWN, ""),
]


def make_nodes(count: int) -> None:
    Node.objects.all().delete()
    Partition.objects.all().delete()
    Node.objects.bulk_create(
        Node(
            name=f"n{i:04d}",
            cpus=64,
            alloc_cpus=i % 65,
            base_state=LOOKS[i % len(LOOKS)][0],
            flags=LOOKS[i % len(LOOKS)][1],
            reason=LOOKS[i % len(LOOKS)][2],
        )
        for i in range(1, count + 1)
    )
    Partition.objects.create(name="all", nodes=f"n[0001-{count:04d}]", is_default=True)
    Partition.objects.create(
        name="odd", nodes=",".join(f"n{i:04d}" for i in range(1, count + 1, 2)), position=1
    )


@pytest.fixture
def staff_client(client):
    client.force_login(User.objects.create_user("root", password="pw", is_staff=True))
    return client


def tile_count(html: str) -> int:
    return len(re.findall(r'<li class="tile[^"]*" data-node=', html))


def queries_for(client, url: str, nodes: int) -> list[str]:
    make_nodes(nodes)
    client.get(url)  # warm the caches (templates, the configuration's revision)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert tile_count(response.content.decode()) >= nodes // 2
    return [q["sql"] for q in queries]


@pytest.mark.parametrize("url", GRIDS)
def test_the_grid_reads_as_many_times_for_200_nodes_as_for_10(staff_client, url):
    few, many = queries_for(staff_client, url, 10), queries_for(staff_client, url, 200)
    assert len(many) == len(few), many


class LookupCounter:
    """Counts Django's template variable lookups (``{{ t.name }}`` is one) during renders."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = template_base.Variable._resolve_lookup

        def counted(variable: template_base.Variable, context: object) -> object:
            self.calls += 1
            return original(variable, context)

        monkeypatch.setattr(template_base.Variable, "_resolve_lookup", counted)


@pytest.mark.parametrize("url", GRIDS)
def test_the_template_does_as_many_lookups_for_200_nodes_as_for_10(staff_client, monkeypatch, url):
    counter = LookupCounter(monkeypatch)
    counts = {}
    for nodes in (10, 200):
        make_nodes(nodes)
        staff_client.get(url)
        counter.calls = 0
        html = staff_client.get(url).content.decode()
        assert tile_count(html) >= nodes // 2
        counts[nodes] = counter.calls
    # A template loop over the tiles makes a dozen lookups per tile: 2,000 more for 200.
    assert counts[200] == counts[10], counts


def test_state_words_are_worked_out_once_per_look_not_per_node(staff_client, monkeypatch):
    make_nodes(200)
    calls = []
    original = states.sinfo_short
    monkeypatch.setattr(
        states, "sinfo_short", lambda base, flags: calls.append((base, flags)) or original(base, flags)
    )
    selectors.node_look.cache_clear()
    html = staff_client.get("/nodes/").content.decode()
    assert tile_count(html) == 200
    assert len(calls) == len(LOOKS)
    # ... and every tile still shows its own look.
    assert re.search(r'<li class="tile s-drain" data-node="n0002" data-state="drain">', html)
    assert re.search(r'<li class="tile s-down nr" data-node="n0003" data-state="down\*">', html)
    assert re.search(r'<li class="tile s-idle p-off" data-node="n0004" data-state="idle~">', html)


def test_tiles_escape_the_node_name_and_reason(staff_client):
    make_nodes(2)
    Node.objects.create(
        name='x"><b>y', cpus=4, base_state=NodeBase.IDLE, flags=NodeFlag.DRAIN, reason="<i>r</i>"
    )
    for url in ("/nodes/", "/nodes/?group=partition", "/_grid"):
        html = staff_client.get(url).content.decode()
        assert "<b>y" not in html and "<i>r" not in html, url
        assert 'data-node="x&quot;&gt;&lt;b&gt;y"' in html, url
    html = staff_client.get("/nodes/").content.decode()
    assert 'title="x&quot;&gt;&lt;b&gt;y: IDLE+DRAIN, CPUs 0/4, Reason=&lt;i&gt;r&lt;/i&gt;"' in html
    assert '<span class="sr-only">Reason </span>&lt;i&gt;r&lt;/i&gt;</span>' in html
