"""scontrol show node's LastBusyTime= reads the API's ``last_busy`` (it read a key the API
never had, so it always printed None)."""

from __future__ import annotations

from datetime import UTC, datetime

from cli.scontrol import node_record, render_record
from cluster.models import Node


def test_last_busy_time_from_the_api(demo, users, api):
    shown = render_record(node_record(api("alice").get("/api/nodes/node05/").json()))
    assert "   LastBusyTime=None ResumeAfterTime=None\n" in shown
    Node.objects.filter(name="node05").update(last_busy=datetime(2026, 3, 1, 9, 30, 5, tzinfo=UTC))
    node = api("alice").get("/api/nodes/node05/").json()
    shown = render_record(node_record(node))
    local = datetime(2026, 3, 1, 9, 30, 5, tzinfo=UTC).astimezone().strftime("%Y-%m-%dT%H:%M:%S")
    assert f"   LastBusyTime={local} ResumeAfterTime=None\n" in shown
