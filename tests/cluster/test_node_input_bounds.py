"""Node and reservation endpoints refuse unbounded or malformed input with a 400 naming the
field, quickly, and change nothing (issue 10, "Bounded, validated input everywhere")."""

from __future__ import annotations

import time

import pytest

from cluster.models import Event, Node, Reservation
from cluster.services import inputs
from cluster.services.dynamic_nodes import node_create
from cluster.services.errors import PermissionDenied
from cluster.services.nodes import node_update_request

pytestmark = pytest.mark.django_db

HUGE = "node[1-2000000]"


def _rows():
    return list(Node.objects.order_by("name").values()), Event.objects.count()


def _refused(response, field):
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    return response.json()["error"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"weight": 10**30}, "weight", "between 0 and 2147483647"),
        ({"weight": 2**31}, "weight", "between 0 and 2147483647"),
        ({"reason": "a\x00b", "state": "DRAIN"}, "reason", "control character"),
        ({"reason": ["x"], "state": "DRAIN"}, "reason", "a string is expected"),
        ({"reason": "x" * 257}, "reason", "longer than 256"),
        ({"state": 5}, "state", "a string is expected"),
        ({"features": "f" * 513}, "features", "longer than 512"),
        ({"suspend_time": 10**30}, "suspend_time", "out of range"),
        ({"instance_id": "i" * 129}, "instance_id", "longer than 128"),
    ],
)
def test_node_update_values_are_checked(demo, api, body, field, words):
    before = _rows()
    error = _refused(
        api("admin").post("/api/nodes/update/", {"nodes": "node01", **body}, format="json"), field
    )
    assert words in error
    assert _rows() == before


def test_a_node_update_request_is_refused_to_a_non_staff_user_whatever_its_body(demo, users):
    for body in ({"nodes": "node01", "weight": "abc"}, ["not", "an", "object"], {"partiton": "x"}):
        with pytest.raises(PermissionDenied):
            node_update_request(actor=users["alice"], body=body)


def test_a_node_update_request_refuses_unknown_fields_and_non_objects(demo, users):
    with pytest.raises(inputs.ServiceError, match=r"Unknown field\(s\): partiton"):
        node_update_request(actor=users["admin"], body={"nodes": "node01", "partiton": "debug"})
    with pytest.raises(inputs.ServiceError, match="must be a JSON object"):
        node_update_request(actor=users["admin"], body=["node01"])
    assert node_update_request(actor=users["admin"], body={"nodes": "node01", "weight": "7"}) == ["node01"]
    assert Node.objects.get(name="node01").weight == 7


def test_non_staff_node_update_with_a_bad_weight_gets_403(demo, api):
    response = api("alice").post("/api/nodes/update/", {"nodes": "node01", "weight": "abc"}, format="json")
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/nodes/update/", {"nodes": HUGE, "state": "DRAIN", "reason": "x"}),
        ("/api/nodes/delete/", {"nodes": HUGE}),
        ("/api/reservations/", {"name": "big", "users": "alice", "nodes": HUGE}),
        ("/api/nodes/create/", {"NodeName": HUGE}),
    ],
)
def test_a_two_million_node_hostlist_is_refused_in_under_100_ms(demo, api, url, body):
    client = api("admin")
    before = _rows()
    started = time.perf_counter()
    response = client.post(url, body, format="json")
    elapsed = time.perf_counter() - started
    assert response.status_code == 400, response.content
    assert (
        "Invalid node name specified" in response.json()["error"]
        or "one node at a time" in response.json()["error"]
    )
    assert elapsed < 0.1
    assert _rows() == before
    assert not Reservation.objects.exists()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"NodeName": "n99", "CPUs": str(10**30)}, "CPUs"),
        ({"NodeName": "n99", "RealMemory": "0"}, "RealMemory"),
        ({"NodeName": "n\x0099"}, "NodeName"),
        ({"NodeName": "n" * 65}, "NodeName"),
        ({"NodeName": "n99", "Weight": "٣"}, "Weight"),
        ({"NodeName": "n99", "Feature": "f" * 513}, "Feature"),
        ({"NodeName": "n99", "State": ["cloud"]}, "State"),
    ],
)
def test_dynamic_node_values_are_checked(demo, api, params, field):
    before = _rows()
    _refused(api("admin").post("/api/nodes/create/", params, format="json"), field)
    assert _rows() == before


def test_a_deeply_nested_hres_parameter_creates_the_node_without_layers(demo, users):
    # json.loads raises RecursionError on it: the node is made with no membership, as a
    # bad HRES= always is (Slurm's hres.html, "Dynamic Nodes"), instead of a 500.
    node = node_create(actor=users["admin"], params={"NodeName": "node40", "HRES": "[" * 2000 + "]" * 2000})
    assert node.extra["hres"] == []


def test_node_create_names_the_row_as_the_agent_will_register_it(demo, users):
    assert node_create(actor=users["admin"], params={"NodeName": "node[41]"}).name == "node41"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"duration": str(10**30)}, "duration"),
        ({"duration": "99999999999:00:00"}, "duration"),
        ({"start_time": "now+99999999999days"}, "start_time"),
        ({"start_time": "9999-12-31T23:59:59"}, "end_time"),
        ({"name": "r\x005"}, "name"),
        ({"name": "r" * 65}, "name"),
        ({"name": ["r"]}, "name"),
        ({"users": "a\x01lice"}, "users"),
        ({"users": "alice," * 300}, "users"),
        ({"users": "al ice"}, "users"),
        ({"licenses": "natural(low1):" + "9" * 30, "nodes": ""}, "licenses"),
        ({"partiton": "debug"}, "partiton"),
        ({"flags": 5}, "flags"),
    ],
)
def test_reservation_values_are_checked(demo, api, body, field):
    events = Event.objects.count()
    _refused(
        api("admin").post("/api/reservations/", {"users": "alice", "nodes": "node01", **body}, format="json"),
        field,
    )
    assert not Reservation.objects.exists()
    assert Event.objects.count() == events


def test_a_refused_reservation_update_changes_nothing(demo, api):
    client = api("admin")
    made = client.post(
        "/api/reservations/", {"name": "r1", "users": "alice", "nodes": "node01"}, format="json"
    )
    assert made.status_code == 201
    before = list(Reservation.objects.values())
    for body in ({"duration": str(10**30)}, {"nodes": HUGE}, {"users": "bob\x00"}, {"nodez": "node02"}):
        assert client.patch("/api/reservations/r1/", body, format="json").status_code == 400
    assert list(Reservation.objects.values()) == before
