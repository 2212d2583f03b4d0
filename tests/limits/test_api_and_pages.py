"""The limits REST API (as sacctmgr/sshare call it) and the console pages."""

from __future__ import annotations

import pytest

from cluster.models import ClusterConfig, Job
from cluster.services.jobs import job_submit
from limits.dump import dump_text, load_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_api(demo, api):
    c = api("admin")
    for path, body in (
        ("/api/limits/add/account/", {"names": ["science"], "options": ["GrpTRESMins=cpu=10"]}),
        ("/api/limits/add/user/", {"names": ["alice"], "options": ["Account=science"]}),
    ):
        assert c.post(path, body, format="json").status_code == 200
    return c


def test_preview_then_commit_and_show(admin_api):
    body = {"where": ["name=science"], "options": ["MaxJobs=4"], "commit": False}
    answer = admin_api.post("/api/limits/modify/account/", body, format="json").json()
    assert answer["committed"] is False and "science" in answer["lines"][-1]
    rows = admin_api.get("/api/limits/show/assoc/", {"where": "account=science"}).json()["rows"]
    assert [r["MaxJobs"] for r in rows if not r["User"]] == [""]
    admin_api.post("/api/limits/modify/account/", {**body, "commit": True}, format="json")
    rows = admin_api.get("/api/limits/show/assoc/", {"where": "account=science"}).json()["rows"]
    assert [r["MaxJobs"] for r in rows if not r["User"]] == ["4"]


def test_errors_are_4xx_with_the_message(admin_api, api):
    bad = admin_api.post(
        "/api/limits/modify/account/", {"where": ["name=science"], "options": ["GrpTRES=cpu"]}, format="json"
    )
    assert bad.status_code == 400 and "Invalid TRES specification" in bad.json()["error"]
    denied = api("alice").post("/api/limits/add/qos/", {"names": ["x"]}, format="json")
    assert denied.status_code == 403


def test_sshare_and_assoc_mgr(admin_api):
    rows = admin_api.get("/api/limits/sshare/", {"all": "1"}).json()["rows"]
    science = next(r for r in rows if r["Account"].strip() == "science" and not r["User"])
    assert science["GrpTRESMins"] == "cpu=10" and science["GrpTRESRaw"].startswith("cpu=0,mem=0")
    mgr = admin_api.get("/api/limits/assoc_mgr/").json()
    assert any("TresDecayHalfLife=cpu=604800" in line for r in mgr["associations"] for line in r["lines"])


def test_dump_and_load_round_trip(admin_api, users):
    text = dump_text()
    assert "Account - 'science'" in text and "GrpTRESMins=cpu=10" in text and "User - 'alice'" in text
    admin_api.post("/api/limits/delete/user/", {"where": ["name=alice"]}, format="json")
    change = load_text(actor=users["admin"], text=text)
    assert change.count >= 3
    assert "User - 'alice'" in dump_text()
    with pytest.raises(Exception, match="line 2"):
        load_text(actor=users["admin"], text="Cluster - 'demo'\nBogus - 'x'\n")


def test_console_pages(admin_api, users, client):
    cfg = ClusterConfig.current()
    cfg.options = {**cfg.options, "AccountingStorageEnforce": "limits"}
    cfg.version += 1
    cfg.save()
    job = job_submit(user=users["alice"], spec={"wrap": "true"}).job_ids[0]
    client.force_login(users["admin"])
    Job.objects.filter(pk=job).update(reason="AssocGrpCPUMinutesLimit")
    page = client.get("/limits/").content.decode()
    assert "science" in page and "GrpTRESMins=cpu=10" in page
    # Each table its own panel; a held job's id opens its page.
    for heading in ("limits-assoc-h", "limits-qos-h", "limits-held-h"):
        assert f'<section class="panel" aria-labelledby="{heading}">' in page
    assert f'<td><a href="/jobs/{job}/">{job}</a></td>' in page
    calc = client.get("/limits/calculator/", {"user": "alice", "account": "science"}).content.decode()
    assert "GrpTRESMins=cpu=10" in calc and "AssocGrpCPUMinutesLimit" in calc
    assert client.get(f"/limits/jobs/{job}/").status_code == 200


def test_a_change_through_the_api_is_recorded_with_its_token_user(admin_api):
    from auditlog.models import LogEntry

    from limits.models import Account

    entry = LogEntry.objects.get_for_object(Account.objects.get(name="science")).first()
    assert entry is not None and entry.actor.username == "admin" and entry.remote_addr == "127.0.0.1"
