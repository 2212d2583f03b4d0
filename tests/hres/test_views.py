"""The Resources page and a layer's page, through Django's test client: the trees, the
holders of a layer, the staff form going through the update service, plotly served."""

from __future__ import annotations

import pytest
from django.urls import reverse

from cluster.models import Job
from cluster.services.scheduling import schedule_pass
from hres import services
from tests.hres.test_services import hres_conf, submit  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser_client(client, users):
    client.force_login(users["admin"])
    return client


def test_trees_follow_parents_and_containment(hres_conf):  # noqa: F811
    tree = {r.name: r for r in services.layer_tree()}
    power = tree["power"]
    assert [r.name for r in power.roots] == ["datacenter"]
    row1 = next(la for la in power.layers() if la.name == "row1")
    assert [c.name for c in row1.children] == ["rack1", "rack2"]
    flat = tree["flat"]
    assert [r.name for r in flat.roots] == ["top"]
    mid1 = next(la for la in flat.layers() if la.name == "mid1")
    assert [c.name for c in mid1.children] == ["low1", "low2"] and mid1.depth == 1
    assert [c.name for c in tree["natural"].roots[0].children] == ["low1", "low2"]


def test_the_page_shows_usage_and_disabled_layers(hres_conf, browser_client, users):  # noqa: F811
    job_id = submit(users["alice"], licenses="power:1000", nodes="2", nodelist="node[01-02]")
    schedule_pass()
    services.hres_update(actor=users["admin"], hres_name="flat", layer_name="low4", disable_layer=True)
    page = browser_client.get("/hres/").content.decode()
    assert 'data-live-topic="hres jobs"' in page and "/plotly/" in page
    assert 'data-layer="rack1" data-used="2000"' in page
    assert 'data-layer="low4" data-used="0" class="hres-off" data-disabled="true"' in page
    layer = browser_client.get("/hres/power/rack1/").content.decode()
    assert f'data-job-id="{job_id}"' in layer and "node[01-08]" in layer
    assert browser_client.get("/hres/power/nosuch/").status_code == 404
    assert Job.objects.get(pk=job_id).state == "RUNNING"


def test_the_staff_form_uses_the_update_service(hres_conf, client, users):  # noqa: F811
    client.force_login(users["admin"])
    answer = client.post("/hres/power/rack1/", {"count": "4000"})
    assert answer.status_code == 400 and "BaseUsage" in answer.content.decode()
    answer = client.post("/hres/power/rack1/", {"count": "45000", "disable_layer": "true"})
    assert answer.status_code == 302
    rack1 = next(e for e in services.license_entries("power") if e["layer_name"] == "rack1")
    assert (rack1["conf_total"], rack1["disable_layer"]) == (45000, True)
    client.force_login(users["alice"])
    assert client.post("/hres/power/rack1/", {"count": "40000"}).status_code == 400


def test_plotly_is_served_from_the_installed_package(client):
    answer = client.get(reverse("plotly-js"))
    assert answer.status_code == 200 and answer["Content-Type"] == "text/javascript"
    assert b"plotly" in answer.content[:2000].lower()


def test_the_admin_add_form_goes_through_the_service(hres_conf, client, users):  # noqa: F811
    client.force_login(users["admin"])
    url = "/admin/hres/layerupdate/add/"
    base = {"resource": "power", "layer": "rack1", "disable_hres": "", "disable_layer": ""}
    answer = client.post(url, {**base, "count": "4000"})
    assert answer.status_code == 200 and "BaseUsage" in answer.content.decode()
    answer = client.post(url, {**base, "count": "45000"})
    assert answer.status_code == 302
    rack1 = next(e for e in services.license_entries("power") if e["layer_name"] == "rack1")
    assert rack1["conf_total"] == 45000
    from cluster.models import Event

    assert Event.objects.filter(reason="hres update", user="admin").count() == 1


def test_mode_1_and_2_sunbursts_show_usage_and_bars_warn_near_full(hres_conf, users):  # noqa: F811
    # Idle: every leaf alike, so that the tree shows rather than its root alone.
    idle = {r.name: r for r in services.layer_tree()}["flat"].sunburst()
    sizes = dict(zip(idle["ids"], idle["values"], strict=True))
    assert sizes == {"top": 0, "mid1": 0, "mid2": 0, "low1": 1, "low2": 1, "low3": 1, "low4": 1}
    submit(users["alice"], licenses="flat:11", nodelist="node01")
    schedule_pass()
    tree = {r.name: r for r in services.layer_tree()}
    flat = tree["flat"].sunburst()
    used = {la.name: la.used for la in tree["flat"].layers()}
    assert dict(zip(flat["ids"], flat["values"], strict=True)) == used and used["low1"] == 11
    # Mode 3 areas are the leaf layers' totals, a parent spanning its children.
    power = tree["power"]
    assert power.sunburst()["values"] == [0 if la.children else la.total for la in power.layers()]
    near = {la.name: la.near_full for la in tree["flat"].layers()}
    assert near["low1"] and not near["mid1"]  # 11/12 = 92 %, 11/16 = 69 %
