"""Dynamic nodes (Slurm's hres.html, "Dynamic Nodes"): created with ``HRES=`` layers by
``scontrol create`` or an agent's dynamic registration, deleted from every layer."""

from __future__ import annotations

import pytest
from ClusterShell.NodeSet import NodeSet

from cluster.models import Node
from cluster.services import agents
from cluster.services.dynamic_nodes import node_create, node_delete, split_conf
from cluster.services.errors import PermissionDenied, ServiceError
from hres import services
from tests.hres.test_services import hres_conf  # noqa: F401 - the demo cluster with resources.yaml

pytestmark = pytest.mark.django_db

RACK2 = '[{"hres_name":"power","layer_name":"rack2"}]'


def _nodes_of(resource: str, layer: str) -> set[str]:
    entry = next(e for e in services.license_entries(resource) if e["layer_name"] == layer)
    return set(NodeSet(entry["nodes"])) if entry["nodes"] else set()


def test_create_cloud_node_joins_its_layer_and_parents_then_delete_leaves(users, hres_conf):  # noqa: F811
    with pytest.raises(PermissionDenied):
        node_create(actor=users["alice"], params={"NodeName": "node33", "State": "cloud"})
    node = node_create(
        actor=users["admin"],
        params={"NodeName": "node33", "State": "cloud", "CPUs": "8", "HRES": RACK2},
    )
    assert (node.in_conf, node.cpus, "CLOUD" in node.state) == (False, 8, True)
    assert "node33" in _nodes_of("power", "rack2") and "node33" in _nodes_of("power", "datacenter")
    with pytest.raises(ServiceError, match=r"slurm\.conf"):
        node_delete(actor=users["admin"], names="node01")
    node_delete(actor=users["admin"], names="node33")
    assert not Node.objects.filter(name="node33").exists()
    assert "node33" not in _nodes_of("power", "datacenter")


def test_unsuitable_layer_creates_the_node_without_membership(users, hres_conf, caplog):  # noqa: F811
    node_create(
        actor=users["admin"],
        params={
            "NodeName": "node34",
            "State": "future",
            "HRES": '[{"hres_name":"power","layer_name":"row1"}]',
        },
    )
    assert Node.objects.filter(name="node34").exists()
    assert "node34" not in _nodes_of("power", "row1")
    assert "not a leaf layer" in caplog.text


def test_agent_registers_an_unknown_node_only_with_a_dynamic_conf(hres_conf):  # noqa: F811
    plain = {"name": "node40", "cpus": 4, "real_memory": 4000, "boot_time": 1.0}
    got = agents.agent_register(agent_id="t:2", nodes=[plain], running=[], completions=[])
    assert "node40" in got.rejected
    conf = f"HRES={RACK2} RealMemory=4000"
    got = agents.agent_register(agent_id="t:2", nodes=[{**plain, "conf": conf}], running=[], completions=[])
    assert got.accepted == ["node40"]
    assert Node.objects.get(name="node40").real_memory == 4000
    assert "node40" in _nodes_of("power", "rack2")
    # Ignored for a node in slurm.conf: node01 stays in rack1 only.
    agents.agent_register(
        agent_id="t:1", nodes=[{**plain, "name": "node01", "conf": conf}], running=[], completions=[]
    )
    assert "node01" not in _nodes_of("power", "rack2")


def test_split_conf_keeps_json_whole():
    assert split_conf('HRES=[{"a": "b c"}] CPUs=4') == [("HRES", '[{"a": "b c"}]'), ("CPUs", "4")]


def test_deleting_a_node_removes_only_that_node_from_the_layer_changes(users, hres_conf):  # noqa: F811
    """``Nodes=+node[33-34]`` named both nodes; deleting node33 keeps node34's change."""
    admin = users["admin"]
    for name in ("node33", "node34"):
        node_create(actor=admin, params={"NodeName": name, "State": "future"})
    services.hres_update(actor=admin, hres_name="power", layer_name="rack3", nodes="+node[33-34]")
    services.hres_update(actor=admin, hres_name="flat", layer_name="low1", nodes="node[01-08,33-34]")
    services.hres_update(actor=admin, hres_name="natural", layer_name="low2", nodes="+node33")
    node_delete(actor=admin, names="node33")
    assert "node34" in _nodes_of("power", "rack3") and "node34" in _nodes_of("power", "row2")
    assert _nodes_of("flat", "low1") == {f"node{i:02d}" for i in (*range(1, 9), 34)}
    assert "node33" not in _nodes_of("natural", "low2")
    # The same name created again starts with no layers of the deleted node.
    node_create(actor=admin, params={"NodeName": "node33", "State": "future"})
    assert not {"node33"} & (_nodes_of("power", "rack3") | _nodes_of("natural", "low2"))
