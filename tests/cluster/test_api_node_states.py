"""GET /api/nodes/?state=: sinfo -t's list, filtered by the controller (it was ignored)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node

pytestmark = pytest.mark.django_db


def _states(**nodes: tuple[NodeBase, int, int]) -> None:
    Node.objects.update(base_state=NodeBase.IDLE, flags=0, alloc_cpus=0)
    for name, (base, flags, cpus) in nodes.items():
        Node.objects.filter(name=name).update(base_state=base, flags=flags, alloc_cpus=cpus)


def _names(api, text: str) -> set[str]:
    response = api("alice").get(f"/api/nodes/?state={quote(text)}&limit=1000")
    assert response.status_code == 200, response.content
    return {n["name"] for n in response.json()["results"]}


def test_only_nodes_in_the_states_asked_for_are_listed(demo, api):
    _states(
        node01=(NodeBase.IDLE, NodeFlag.DRAIN, 0),
        node02=(NodeBase.MIXED, NodeFlag.DRAIN, 2),
        node03=(NodeBase.ALLOCATED, 0, 4),
        node04=(NodeBase.DOWN, NodeFlag.NOT_RESPONDING, 0),
        node05=(NodeBase.MIXED, 0, 1),
    )
    every = set(Node.objects.values_list("name", flat=True))
    assert _names(api, "drain") == {"node01", "node02"}
    assert _names(api, "drained") == {"node01"}
    assert _names(api, "draining") == {"node02"}
    assert _names(api, "alloc") == {"node02", "node03", "node05"}
    assert _names(api, "down,no_respond") == {"node04"}
    assert _names(api, "idle&drain") == {"node01"}
    assert _names(api, "idle") == every - {"node02", "node03", "node04", "node05"}
    assert _names(api, "all") == every


def test_a_word_naming_no_state_is_a_400_with_sinfo_s_message(demo, api):
    response = api("alice").get("/api/nodes/?state=bogus")
    assert response.status_code == 400
    assert response.json()["error"] == 'Bad state string: "bogus"'
