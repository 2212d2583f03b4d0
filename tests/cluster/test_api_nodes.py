"""Node updates and reconfigure: staff only, validated, recorded with who and when."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry

from cluster.models import ClusterConfig, Node, Partition

pytestmark = pytest.mark.django_db


def test_demo_configuration_loaded(demo):
    # node01..node32, plus cloud[01-04] (State=CLOUD, powered down: examples/demo power saving)
    assert Node.objects.count() == 36
    assert list(Partition.objects.values_list("name", flat=True)) == ["debug", "batch", "long", "cloud"]
    assert Partition.objects.get(name="debug").is_default
    assert ClusterConfig.current().option_int("SlurmdTimeout", 0) == 20


def test_drain_needs_staff_and_a_reason(demo, api):
    body = {"nodes": "node[01-02]", "state": "DRAIN", "reason": "maintenance"}
    assert api("alice").post("/api/nodes/update/", body, format="json").status_code == 403
    refused = api("admin").post("/api/nodes/update/", {**body, "reason": ""}, format="json")
    assert refused.status_code == 400 and "must specify a reason" in refused.json()["error"]
    assert not Node.objects.get(name="node01").flags
    ok = api("admin").post("/api/nodes/update/", body, format="json")
    assert ok.json() == {"updated": ["node01", "node02"]}
    node = Node.objects.get(name="node01")
    assert node.state.endswith("+DRAIN") and node.reason == "maintenance" and node.reason_user == "admin"
    entry = LogEntry.objects.get_for_object(node).first()
    assert entry.actor.username == "admin" and "reason" in entry.changes_dict
    resumed = api("admin").post("/api/nodes/update/", {"nodes": "node01", "state": "RESUME"}, format="json")
    assert resumed.status_code == 200
    assert Node.objects.get(name="node01").reason == ""


def test_bad_hostlist_refused(demo, api):
    response = api("admin").post(
        "/api/nodes/update/", {"nodes": "node[1-", "state": "DRAIN", "reason": "x"}, format="json"
    )
    assert response.status_code == 400 and "Invalid node name specified" in response.json()["error"]


def test_reconfigure_with_a_bad_line_changes_nothing(demo, api, conf_dir, settings):
    settings.CONF_DIR = conf_dir
    version = ClusterConfig.current().version
    with open(conf_dir / "partitions.conf", "a") as f:
        f.write("PartitionName=broken Nodes=node[40-\n")
    response = api("admin").post("/api/reconfigure/")
    assert response.status_code == 400
    assert "partitions.conf:" in response.json()["error"]
    assert ClusterConfig.current().version == version
    assert not Partition.objects.filter(name="broken").exists()


def test_reconfigure_applies_a_good_change(demo, api, conf_dir, settings):
    settings.CONF_DIR = conf_dir
    with open(conf_dir / "partitions.conf", "a") as f:
        f.write("PartitionName=extra Nodes=node[01-02] MaxTime=5\n")
    assert api("alice").post("/api/reconfigure/").status_code == 403
    assert api("admin").post("/api/reconfigure/").status_code == 200
    assert Partition.objects.get(name="extra").max_time == 5


def test_cloud_accounting_fields_are_updated_shown_and_kept_in_history(demo, api):
    body = {"nodes": "cloud01", "instance_id": "i-0abc", "instance_type": "c5.large", "extra": '{"zone":"a"}'}
    assert api("alice").post("/api/nodes/update/", body, format="json").status_code == 403
    assert api("admin").post("/api/nodes/update/", body, format="json").status_code == 200
    shown = api("alice").get("/api/nodes/cloud01/").json()
    assert (shown["instance_id"], shown["instance_type"], shown["extra"]) == (
        "i-0abc",
        "c5.large",
        '{"zone":"a"}',
    )
    api("admin").post("/api/nodes/update/", {"nodes": "cloud01", "instance_type": "c5.xlarge"}, format="json")
    history = [
        e.changes_dict.get("instance_type")
        for e in LogEntry.objects.get_for_object(Node.objects.get(name="cloud01"))
    ]
    assert ["c5.large", "c5.xlarge"] in history


def test_agents_report_cloud_accounting_fields(demo):
    from cluster.services.agents import agent_register

    node = {"name": "cloud02", "cpus": 4, "real_memory": 2000, "boot_time": 1.0, "instance_id": "i-9"}
    agent_register(agent_id="a:1", nodes=[node], running=[], completions=[])
    assert Node.objects.get(name="cloud02").instance_id == "i-9"
