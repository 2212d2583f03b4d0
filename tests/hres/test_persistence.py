"""Node layer changes across restarts and reconfigures (Slurm's hres.html, "Runtime Updates"):
who keeps them (dynamic and cloud nodes always, the others with ``-R``), who returns to
the configured layers (powered down, resume failed), a saved layer gone, and what is never
saved (Count, Base, disabled state)."""

from __future__ import annotations

import logging
import os

import pytest
from ClusterShell.NodeSet import NodeSet
from django.utils import timezone

from cluster.core.states import NodeFlag
from cluster.models import Node
from cluster.services.configuration import config_load
from cluster.services.dynamic_nodes import node_create
from config.server import main as server_main
from hres import services
from hres.core.persistence import without_node
from power import services as power_services
from power.core.policy import RESUME_TIMEOUT_REASON, MarkDown, NodeChange
from tests.hres.test_services import entry, hres_conf  # noqa: F401 - the demo cluster with resources.yaml

pytestmark = pytest.mark.django_db


def _nodes(layer: str, resource: str = "power") -> set[str]:
    text = entry(resource, layer)["nodes"]
    return set(NodeSet(text)) if text else set()


def _move(admin, node: str, src: str, dst: str) -> None:
    """Move a node between two Mode 3 leaves, as an administrator would."""
    services.hres_update(actor=admin, hres_name="power", layer_name=src, nodes=f"-{node}")
    services.hres_update(actor=admin, hres_name="power", layer_name=dst, nodes=f"+{node}")


def _reload(conf, *, recover: bool = False) -> None:
    config_load(path=conf / "slurm.conf", recover=recover)


def test_a_default_restart_returns_slurm_conf_nodes_to_their_configured_layers(hres_conf, users):  # noqa: F811
    _move(users["admin"], "node08", "rack1", "rack2")
    assert "node08" in _nodes("rack2")
    _reload(hres_conf)
    assert "node08" in _nodes("rack1") and "node08" not in _nodes("rack2")


def test_recover_keeps_node_layers_but_not_count_base_or_disabled(hres_conf, users):  # noqa: F811
    admin = users["admin"]
    _move(admin, "node08", "rack1", "rack2")
    services.hres_update(actor=admin, hres_name="power", layer_name="rack1", count=45000, base="")
    services.hres_update(actor=admin, hres_name="power", layer_name="rack2", disable_layer="true")
    services.hres_update(actor=admin, hres_name="flat", disable_hres="true")
    _reload(hres_conf, recover=True)
    assert "node08" in _nodes("rack2") and "node08" not in _nodes("rack1")
    assert "node08" in _nodes("row1")  # parents follow the leaf
    rack1 = entry("power", "rack1")
    assert (rack1["conf_total"], rack1["base_usage"]) == (40000, 5000)
    assert entry("power", "rack2")["disable_layer"] is False
    assert entry("flat", "top")["disable_hres"] is False
    # Saved again at the next restart with -R, dropped by a default one.
    _reload(hres_conf, recover=True)
    assert "node08" in _nodes("rack2")
    _reload(hres_conf)
    assert "node08" in _nodes("rack1")


def test_dynamic_nodes_keep_their_changes_across_a_reconfigure(hres_conf, users):  # noqa: F811
    admin = users["admin"]
    node_create(
        actor=admin,
        params={
            "NodeName": "node33",
            "State": "future",
            "HRES": '[{"hres_name":"power","layer_name":"rack2"}]',
        },
    )
    _move(admin, "node33", "rack2", "rack3")
    _reload(hres_conf)
    assert "node33" in _nodes("rack3") and "node33" not in _nodes("rack2")
    assert "node33" in _nodes("row2")


def test_cloud_nodes_keep_their_changes_unless_powered_down(hres_conf, users):  # noqa: F811
    admin = users["admin"]
    Node.objects.filter(name__in=["node05", "node06"]).update(flags=NodeFlag.CLOUD)
    Node.objects.filter(name="node06").update(flags=NodeFlag.CLOUD | NodeFlag.POWERED_DOWN)
    _move(admin, "node05", "rack1", "rack2")
    _move(admin, "node06", "rack1", "rack2")
    _reload(hres_conf)
    assert "node05" in _nodes("rack2")
    # Powered down when slurmctld starts: its configured layers, even with -R.
    assert "node06" in _nodes("rack1")


def test_powering_down_at_start_uses_the_configured_layers_even_with_recover(hres_conf, users):  # noqa: F811
    _move(users["admin"], "node07", "rack1", "rack2")
    Node.objects.filter(name="node07").update(flags=NodeFlag.POWERING_DOWN)
    _reload(hres_conf, recover=True)
    assert "node07" in _nodes("rack1")


def test_a_powered_down_node_returns_to_its_configured_layers(hres_conf, users):  # noqa: F811
    admin = users["admin"]
    node_create(
        actor=admin,
        params={
            "NodeName": "node33",
            "State": "future",
            "HRES": '[{"hres_name":"power","layer_name":"rack2"}]',
        },
    )
    _move(admin, "node33", "rack2", "rack4")
    _move(admin, "node02", "rack1", "rack3")
    now = timezone.now()
    for name in ("node33", "node02"):
        node = Node.objects.get(name=name)
        power_services.apply_node_change(node, NodeChange(name, set_flags=NodeFlag.POWERED_DOWN), now=now)
        node.save()
    # A dynamic node's configured layers are those it was created with.
    assert "node33" in _nodes("rack2") and "node33" not in _nodes("rack4")
    assert "node02" in _nodes("rack1") and "node02" not in _nodes("rack3")
    # Nothing left to recover: a restart with -R keeps them there.
    _reload(hres_conf, recover=True)
    assert "node33" in _nodes("rack2") and "node02" in _nodes("rack1")


def test_a_node_failing_to_resume_returns_to_its_configured_layers(hres_conf, users):  # noqa: F811
    _move(users["admin"], "node03", "rack1", "rack3")
    run = power_services._Apply(power=power_services.settings_in_force(), nodes={}, now=timezone.now())
    run.run([MarkDown("node03", RESUME_TIMEOUT_REASON)])
    assert "node03" in _nodes("rack1") and "node03" not in _nodes("rack3")
    assert services.node_configured_layers(["node03"]) == []  # already there: nothing to do


def test_a_saved_layer_gone_discards_the_nodes_changes_with_an_error(hres_conf, users, caplog):  # noqa: F811
    admin = users["admin"]
    node_create(
        actor=admin,
        params={
            "NodeName": "node33",
            "State": "future",
            "HRES": '[{"hres_name":"power","layer_name":"rack2"}]',
        },
    )
    _move(admin, "node33", "rack2", "rack3")
    _move(admin, "node04", "rack1", "rack2")
    yaml = hres_conf / "resources.yaml"
    yaml.write_text(yaml.read_text().replace("rack3", "rack5"))
    with caplog.at_level(logging.ERROR, logger="hres.services"):
        _reload(hres_conf, recover=True)
    assert "node33" in _nodes("rack2") and "node33" not in _nodes("rack5")
    assert "node33" in caplog.text and "rack3" in caplog.text
    assert "node04" in _nodes("rack2")  # its saved layers still exist


def test_recovered_layers_replace_what_an_edited_resources_yaml_says(hres_conf, users):  # noqa: F811
    _move(users["admin"], "node08", "rack1", "rack2")
    yaml = hres_conf / "resources.yaml"
    yaml.write_text(yaml.read_text().replace('"node[01-08]"', '"node[01-07]"'))
    _reload(hres_conf, recover=True)
    assert "node08" in _nodes("rack2")
    _reload(hres_conf)  # back to its configured layers: now none of power's leaves
    assert "node08" not in _nodes("rack1") | _nodes("rack2")


def test_server_recover_flag_sets_the_start_time_variable(monkeypatch):
    ran = []
    monkeypatch.delenv("FSCHED_RECOVER", raising=False)
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: ran.append(k))
    assert server_main(["-R"]) == 0
    assert os.environ["FSCHED_RECOVER"] == "1" and ran


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"nodes": "+node[33-36]", "count": 5}, {"nodes": "+node[34-36]", "count": 5}),
        ({"nodes": "node[01-08,33]"}, {"nodes": "node[01-08]"}),
        ({"nodes": "node33"}, {"nodes": ""}),  # the layer is left with no node
        ({"nodes": "-node33"}, None),
        ({"nodes": "+node33", "count": 5}, {"count": 5}),
        ({"nodes": "+node34"}, {"nodes": "+node34"}),
        ({"count": 5}, {"count": 5}),
    ],
)
def test_a_deleted_node_is_taken_out_of_the_runtime_updates_alone(changes, expected):
    assert without_node(changes, "node33") == expected
