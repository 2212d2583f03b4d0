"""An event about several nodes (a job started on node[01-02]) links to the node table
filtered by that hostlist, not to a node page that cannot exist (it was a 404)."""

from __future__ import annotations

import re

import pytest

from cluster.models import Job
from cluster.services.scheduling import schedule_pass
from tests.cluster.test_dependencies import register, submit

pytestmark = pytest.mark.django_db


def test_a_multi_node_event_links_to_the_filtered_node_table(demo, users, client):
    register()
    job_id = submit(users["alice"], partition="debug", nodes="2", exclusive=True, time="5")
    schedule_pass()
    assert Job.objects.get(pk=job_id).node_list == "node[01-02]"
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job_id}/").content.decode()
    links = set(re.findall(r'href="(/nodes/[^"]*)"', page))
    assert "/nodes/?view=table&amp;name=node%5B01-02%5D" in links
    assert not any("%5B" in link for link in links if not link.startswith("/nodes/?"))
    table = client.get("/nodes/?view=table&name=node%5B01-02%5D")
    assert table.status_code == 200
    names = set(re.findall(r">(node\d\d)<", table.content.decode()))
    assert names == {"node01", "node02"}
