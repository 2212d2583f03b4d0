"""PrivateData=accounts,usage,users,jobs,nodes on the accounting's pages and API, the HRES
layer page and the power page (#15 point 1)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from cluster.models import ClusterConfig, Job
from cluster.services.jobs import job_submit
from limits.services import record_add

pytestmark = pytest.mark.django_db


def private(text: str) -> None:
    cfg = ClusterConfig.for_update()
    cfg.options = {**cfg.options, "PrivateData": text}
    cfg.save()


@pytest.fixture
def accounts(demo, users):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="account", names=["chem"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science"])
    record_add(actor=admin, entity="user", names=["bob"], options=["Account=chem"])
    return users


def test_private_data_accounts_users_and_usage_in_sacctmgr_show_and_sshare(accounts, api):
    private("accounts,users,usage")
    accounts_seen = [r["Account"] for r in api("alice").get("/api/limits/show/account/").json()["rows"]]
    assert accounts_seen == ["science"]
    assocs = api("alice").get("/api/limits/show/association/").json()["rows"]
    assert {(r["Account"], r["User"]) for r in assocs} == {("science", ""), ("science", "alice")}
    assert [r["User"] for r in api("alice").get("/api/limits/show/user/").json()["rows"]] == ["alice"]
    shares = api("alice").get("/api/limits/sshare/", {"all": "1"}).json()["rows"]
    assert {r["User"] for r in shares} <= {"", "alice"} and any(r["User"] == "alice" for r in shares)
    # The administrator still sees everything.
    admin_accounts = {r["Account"] for r in api("admin").get("/api/limits/show/account/").json()["rows"]}
    assert {"science", "chem"} <= admin_accounts


def test_the_limits_page_follows_private_data(accounts, client):
    job_submit(user=accounts["bob"], spec={"wrap": "true", "hold": True, "account": "chem"})
    private("accounts,usage,jobs")
    client.force_login(get_user_model().objects.get(username="alice"))
    page = client.get("/limits/").content.decode()
    labels = re.findall(r'data-assoc="([^"]*)"', page)
    assert labels and all("science" in label for label in labels), labels
    assert ">bob<" not in page and ">chem<" not in page
    bobs = Job.objects.get(user="bob").id
    assert client.get(f"/limits/jobs/{bobs}/").status_code == 404


def test_private_data_nodes_closes_the_power_page(accounts, client):
    private("nodes")
    client.force_login(get_user_model().objects.get(username="alice"))
    assert client.get("/power/").status_code == 403
    assert client.get("/nodes/_grid").content.decode().count("data-node=") == 0
    client.force_login(get_user_model().objects.get(username="admin"))
    assert client.get("/power/").status_code == 200
