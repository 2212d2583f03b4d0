"""The HRES and power endpoints check the permission before the body, bound counts and
hostlists, and refuse what they cannot store (issue 10, "Bounded, validated input")."""

from __future__ import annotations

import time

import pytest

from cluster.models import Event, Node
from hres.models import LayerUpdate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"count": 10**30}, "count"),
        ({"count": str(2**31)}, "count"),
        ({"base": {"a": 1}}, "base"),
        ({"base": [["storage", 10**30]]}, "base"),
        ({"base": "storage:" + "9" * 30}, "base"),
        ({"nodes": "node[1-2000000]"}, "nodes"),
        ({"layer_name": "low\x001", "count": 1}, "layer_name"),
    ],
)
def test_hres_update_values_are_bounded(demo, api, body, field):
    updates = LayerUpdate.objects.count()
    started = time.perf_counter()
    response = api("admin").post(
        "/api/hres/", {"hres_name": "natural", "layer_name": "low1", **body}, format="json"
    )
    assert time.perf_counter() - started < 0.1
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert LayerUpdate.objects.count() == updates


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/hres/", ["not", "an", "object"]),
        ("/api/hres/", {"bogus": 1}),
        ("/api/power/", {"args": 5}),
        ("/api/power/", None),
        ("/api/power/settings/", {"SuspendExcNodes": "node[1-"}),
        ("/api/power/settings/", "x"),
    ],
)
def test_a_non_staff_user_gets_403_whatever_the_body(demo, api, url, body):
    assert api("alice").post(url, body, format="json").status_code == 403


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/power/", {"op": "POWER_DOWN", "nodes": "node[1-2000000]"}, "nodes"),
        ("/api/power/", {"args": ["down", "node[1-2000000]"]}, "args"),
        ("/api/power/", {"op": "POWER_DOWN", "nodes": "cloud01", "reason": "x\x00"}, "reason"),
        ("/api/power/", {"op": "POWER_DOWN", "nodes": "cloud01", "why": "x"}, "why"),
        ("/api/power/settings/", {"SuspendExcNodes": "node[1-2000000]"}, "SuspendExcNodes"),
        ("/api/power/settings/", {"SuspendExcNodes": "node01:" + "9" * 30}, "SuspendExcNodes"),
        ("/api/power/settings/", {"SuspendExcParts": "debug", "bogus": "x"}, "bogus"),
    ],
)
def test_power_requests_are_bounded(demo, api, url, body, field):
    nodes, events = list(Node.objects.order_by("name").values()), Event.objects.count()
    started = time.perf_counter()
    response = api("admin").post(url, body, format="json")
    assert time.perf_counter() - started < 0.1
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert list(Node.objects.order_by("name").values()) == nodes and Event.objects.count() == events


def test_a_body_that_is_not_an_object_is_a_400(demo, api):
    for url in ("/api/power/", "/api/power/settings/", "/api/hres/"):
        response = api("admin").post(url, ["x"], format="json")
        assert response.status_code == 400 and "JSON object" in response.json()["error"]
