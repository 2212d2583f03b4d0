"""Optional per-node agent keys ($FSCHED_CONF_DIR/agent_keys): a node key speaks for its nodes only."""

from __future__ import annotations

from pathlib import Path

import pytest
from asgiref.sync import async_to_sync

from cluster import agent_keys
from cluster.models import Node
from tests.cluster.agent_socket import AgentSocket

pytestmark = pytest.mark.django_db(transaction=True)

RACK_KEY = "rack1-key-0123456789"


@pytest.fixture
def keyed(demo, settings, tmp_path: Path) -> Path:
    path = tmp_path / "agent_keys"
    path.write_text(f"# rack 1 has its own key\nnode[01-04] {RACK_KEY}\n")
    path.chmod(0o600)
    settings.CONF_DIR = tmp_path
    return path


def test_a_node_key_registers_its_nodes_only(keyed):
    async def scenario():
        comm = AgentSocket("rack1:1", key=RACK_KEY, nodes=("node01", "node02"))
        await comm.authenticate()
        reply = await comm.register("node01", "node05")
        assert reply["nodes"] == ["node01"]
        assert reply["rejected"] == {"node05": "node is not covered by this agent's key"}
        await comm.close()

    async_to_sync(scenario)()
    assert Node.objects.get(name="node05").base_state == "UNKNOWN"


def test_the_cluster_key_cannot_register_a_node_with_its_own_key(keyed, settings):
    async def scenario():
        # Naming a keyed node in hello: the controller proves the node key, not ours.
        comm = AgentSocket("thief:1", nodes=("node01",))
        await comm.open()
        assert not (await comm.hello())["proved"]
        await comm.comm.send_json_to({"type": "auth", "proof": "0" * 64})
        assert await comm.closed_with() == 4003
        # Naming an unkeyed node, then registering a keyed one too.
        comm = AgentSocket("thief:2", nodes=("node05",))
        await comm.authenticate()
        reply = await comm.register("node05", "node02")
        assert reply["nodes"] == ["node05"] and reply["rejected"] == {"node02": "node has its own key"}
        await comm.close()
        # Nodes of two keys in one hello: refused before any proof.
        comm = AgentSocket("mixed:1", nodes=("node04", "node05"))
        await comm.open()
        await comm.comm.send_json_to({"type": "hello", "agent_id": "mixed:1", "nonce": "a" * 64,
                                      "nodes": ["node04", "node05"]})  # fmt: skip
        assert await comm.closed_with() == 4003

    async_to_sync(scenario)()
    assert Node.objects.get(name="node02").base_state == "UNKNOWN"


def test_a_keys_file_others_may_read_refuses_every_agent(keyed):
    keyed.chmod(0o644)

    async def scenario():
        comm = AgentSocket(nodes=("node05",))
        await comm.open()
        await comm.comm.send_json_to(
            {"type": "hello", "agent_id": "a:1", "nonce": "b" * 64, "nodes": ["node05"]}
        )
        assert await comm.closed_with() == 4003

    async_to_sync(scenario)()
    with pytest.raises(ValueError, match="mode 0644: other users may read the keys"):
        agent_keys.load(keyed)


def test_keys_file_errors_name_the_line(tmp_path: Path):
    path = tmp_path / "agent_keys"
    for text, error in (
        ("node[01-02] k1\nnode02 k2\n", "agent_keys:2: node node02 already has a key (line 1)"),
        ("node[01-02]\n", "agent_keys:1: expected '<hostlist> <key>'"),
        ("node[1-99999999] k\n", "agent_keys:1: more than 1000000 nodes"),
    ):
        path.write_text(text)
        path.chmod(0o600)
        with pytest.raises(ValueError) as exc:
            agent_keys.load(path)
        assert str(exc.value) == error
    assert agent_keys.load(tmp_path / "none") == agent_keys.NodeKeys()
