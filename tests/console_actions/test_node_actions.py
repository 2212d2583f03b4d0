"""The node page's drain, resume, power up and power down (#15 point 4): staff only, Slurm's
errors, audited with the request's correlation id."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry

from cluster.models import Event, Node

pytestmark = pytest.mark.django_db


def post(client, url, **data):
    return client.post(url, {"confirmed": "1", **data}, HTTP_X_REQUEST_ID="node-req-1")


def action_entries(node):
    return LogEntry.objects.get_for_object(node).filter(additional_data__action__isnull=False)


def test_staff_sees_the_buttons_others_do_not(client, demo, users):
    client.force_login(users["admin"])
    page = client.get("/nodes/node01/").content.decode()
    for action in ("drain", "resume", "power_up", "power_down"):
        assert f'data-action="{action}"' in page
    client.force_login(users["alice"])
    page = client.get("/nodes/node01/").content.decode()
    assert "data-action=" not in page


def test_drain_needs_a_reason_then_drains_and_resume_undrains(client, demo, users):
    client.force_login(users["admin"])
    response = post(client, "/nodes/node01/actions/drain/")
    assert response.status_code == 400
    assert (
        "You must specify a reason when DOWNING or DRAINING a node. Request denied"
        in response.content.decode()
    )
    node = Node.objects.get(name="node01")
    assert "DRAIN" not in node.state

    response = post(client, "/nodes/node01/actions/drain/", reason="bad fan")
    assert response.status_code == 303 and response["X-Request-ID"] == "node-req-1"
    node.refresh_from_db()
    assert "DRAIN" in node.state and node.reason == "bad fan"
    assert "Node node01 drained." in client.get("/nodes/node01/").content.decode()
    entry = action_entries(node).get()
    assert (entry.cid, entry.actor, entry.additional_data["action"]) == (
        "node-req-1",
        users["admin"],
        "drain",
    )
    # The node's own field-level entry carries the same correlation id.
    assert LogEntry.objects.get_for_object(node).filter(cid="node-req-1").count() >= 2

    assert post(client, "/nodes/node01/actions/resume/").status_code == 303
    node.refresh_from_db()
    assert "DRAIN" not in node.state


@pytest.mark.parametrize("url", ["/nodes/node01/actions/drain/", "/power/nodes/node01/power_down/"])
def test_a_user_is_refused_403(client, demo, users, url):
    client.force_login(users["alice"])
    assert post(client, url, reason="mine now").status_code == 403
    node = Node.objects.get(name="node01")
    assert "DRAIN" not in node.state and not action_entries(node).exists()


def test_staff_powers_a_node_down_and_up(client, demo, users):
    client.force_login(users["admin"])
    response = post(client, "/power/nodes/node01/power_down/", reason="maintenance")
    assert response.status_code == 303, response.content.decode()
    event = Event.objects.filter(detail__power_request="POWER_DOWN").get()
    assert (event.user, event.reason) == ("admin", "maintenance")
    entry = action_entries(Node.objects.get(name="node01")).get()
    assert (entry.cid, entry.additional_data["action"]) == ("node-req-1", "power_down")
    assert post(client, "/power/nodes/node01/power_up/").status_code == 303
    assert Event.objects.filter(detail__power_request="POWER_UP").exists()


def test_unknown_node_is_404(client, demo, users):
    client.force_login(users["admin"])
    response = post(client, "/nodes/nosuch/actions/drain/", reason="x")
    assert response.status_code == 404
    assert "Invalid node name specified: nosuch" in response.content.decode()
