"""Cloud accounting (Slurm's power_save.html, "Cloud Accounting"; #13 point 7): every
InstanceId/InstanceType a node registers with or is given by ``scontrol update`` is kept
as a history, listed by ``GET /api/power/instances/`` (slurmrestd's ``/instances``) and
``sacctmgr show instance``."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from cli import sacctmgr
from cluster.services import agents
from power.models import CloudInstance

pytestmark = pytest.mark.django_db


def register(name: str, now: datetime, **cloud: str) -> None:
    info = {"name": name, "cpus": 4, "real_memory": 2000, "boot_time": 1.0, **cloud}
    agents.agent_register(agent_id="t:1", nodes=[info], running=[], completions=[], now=now)


class ApiClient:
    """The CLI's client, answered by the controller's real API (the test client)."""

    def __init__(self, api) -> None:
        self.api = api

    def get(self, path: str) -> dict:
        answer = self.api.get(path)
        assert answer.status_code == 200, answer.content
        return answer.json()


def test_instance_changes_make_a_history(demo, users, api) -> None:
    t0 = timezone.now() - timedelta(hours=2)
    register("node01", t0, instance_id="12345", instance_type="m7g.medium", extra="arbitrary string")
    register("node01", t0 + timedelta(minutes=5), instance_id="12345", instance_type="m7g.medium")  # same
    assert CloudInstance.objects.count() == 1
    # A new instance at the next registration: the first one ends there.
    t1 = t0 + timedelta(minutes=30)
    register("node01", t1, instance_id="67890", instance_type="m7g.medium")
    # scontrol update nodename=node01 instancetype=m7g.large extra="bigger"
    body = {"nodes": "node01", "instance_type": "m7g.large", "extra": "bigger"}
    assert api("admin").post("/api/nodes/update/", body, format="json").status_code == 200

    listed = api("alice").get("/api/power/instances/").json()["instances"]
    assert [(i["instance_id"], i["instance_type"], i["extra"]) for i in listed] == [
        ("12345", "m7g.medium", "arbitrary string"),
        ("67890", "m7g.medium", "arbitrary string"),
        ("67890", "m7g.large", "bigger"),
    ]
    first, second, current = listed
    assert first["node_name"] == "node01" and first["cluster"] == "demo"
    assert first["time"] == {"time_start": int(t0.timestamp()), "time_end": int(t1.timestamp())}
    assert second["time"]["time_end"] == current["time"]["time_start"] > 0
    assert current["time"]["time_end"] == 0

    # An Extra change alone is written on the current record.
    assert (
        api("admin").post("/api/nodes/update/", {"nodes": "node01", "extra": "x"}, format="json").status_code
        == 200
    )
    assert CloudInstance.objects.get(time_end__isnull=True).extra == "x"
    assert CloudInstance.objects.count() == 3


def test_the_listing_filters_as_sacctmgr_conditions_do(demo, users, api) -> None:
    t0 = timezone.now() - timedelta(days=5)
    register("node01", t0, instance_id="old", instance_type="a")
    register("node01", t0 + timedelta(hours=1), instance_id="new", instance_type="a")
    register("node02", t0, instance_id="other", instance_type="b")

    def ids(query: str) -> list[str]:
        listed = api("alice").get(f"/api/power/instances/?{query}").json()["instances"]
        return [i["instance_id"] for i in listed]

    assert ids("nodes=node01") == ["old", "new"]
    assert ids("instance_type=b") == ["other"]
    later = int((t0 + timedelta(hours=2)).timestamp())
    assert ids(f"start={later}") == ["new", "other"]  # "old" ended before
    assert api("alice").get("/api/power/instances/?colour=red").status_code == 400
    assert api("alice").get("/api/power/instances/?start=yesterday").status_code == 400


def test_sacctmgr_show_instance(demo, users, api, capsys) -> None:
    now = timezone.now()
    register("node01", now - timedelta(minutes=1), instance_id="12345", instance_type="m7g.medium",
             extra="arbitrary string")  # fmt: skip
    register("node02", now - timedelta(days=3), instance_id="gone", instance_type="m7g.medium")
    register("node02", now - timedelta(days=2, hours=23), instance_id="", instance_type="")  # ended
    client = ApiClient(api("alice"))
    flags = {"immediate": False, "noheader": False, "parsable": False, "parsable2": False}
    words = ["format=nodename,instanceid,instancetype,extra"]
    assert sacctmgr._show_instances(client, words, flags) == 0
    # As in the guide's example: right-aligned, NodeName 15 wide, the others 20; node02's
    # instance ended before the start of the previous day (the default Start=).
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == ["NodeName", "InstanceId", "InstanceType", "Extra"]
    assert [len(d) for d in lines[1]] == [15, 20, 20, 20]
    assert lines[2:] == [["node01", "12345", "m7g.medium", "arbitrary", "string"]]

    # Start= reaches back to the old record; -P prints Slurm's default columns.
    flags["parsable2"] = True
    assert sacctmgr._show_instances(client, ["where", "nodes=node02", "start=now-4days"], flags) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Cluster|NodeName|Start|End|InstanceId|InstanceType|Extra"
    assert out[1].startswith("demo|node02|") and out[1].endswith("|gone|m7g.medium|")
    with pytest.raises(sacctmgr.CliError, match="Unknown condition: colour=red"):
        sacctmgr._show_instances(client, ["colour=red"], flags)
