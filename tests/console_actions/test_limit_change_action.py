"""Change an association's or a QOS's limit from the console (#15 point 4): a preview of the
pending jobs it would block or release, computed by the limits core with nothing kept, then
a confirmed change through record_modify, staff only, audited with the request's cid."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry

from cluster.models import ClusterConfig, Job
from cluster.services.jobs import job_submit
from limits.models import QOS, Association

pytestmark = pytest.mark.django_db
PAGE = "/limits/change/"
ALICE = {"account": "science", "user": "alice"}


@pytest.fixture
def science(demo, api, users):
    c = api("admin")
    for path, body in (
        ("/api/limits/add/account/", {"names": ["science"], "options": []}),
        ("/api/limits/add/user/", {"names": ["alice"], "options": ["Account=science"]}),
    ):
        assert c.post(path, body, format="json").status_code == 200, path
    cfg = ClusterConfig.current()
    cfg.options = {**cfg.options, "AccountingStorageEnforce": "limits"}
    cfg.version += 1
    cfg.save()
    spec = {"wrap": "true", "work_dir": "/tmp", "account": "science", "time": "10"}
    return job_submit(user=users["alice"], spec=spec).job_ids[0]


def alice_assoc():
    return Association.objects.get(account__name="science", user__name="alice")


def test_the_tree_links_staff_to_the_change_page(science, client, users):
    client.force_login(users["admin"])
    page = client.get("/limits/").content.decode()
    assert f"{PAGE}?account=science&amp;user=alice" in page and f"{PAGE}?qos=normal" in page
    client.force_login(users["alice"])
    assert "change limit" not in client.get("/limits/").content.decode()


def test_preview_names_the_jobs_blocked_and_keeps_nothing(science, client, users):
    client.force_login(users["admin"])
    entries = LogEntry.objects.count()
    page = client.get(PAGE, {**ALICE, "option": "MaxWall", "value": "5"})
    assert page.status_code == 200
    blocked = page.content.decode().split('id="preview-blocked"')[1].split("</table>")[0]
    assert f'data-job-id="{science}"' in blocked and "AssocMaxWallDurationPerJobLimit" in blocked
    assert alice_assoc().max_wall_duration_per_job is None  # nothing kept
    assert LogEntry.objects.count() == entries


def test_apply_then_preview_the_release(science, client, users):
    client.force_login(users["admin"])
    answer = client.post(
        f"{PAGE}apply/",
        {**ALICE, "option": "MaxWall", "value": "5", "reason": "fair use", "confirmed": "1"},
        HTTP_X_REQUEST_ID="limit-req",
    )
    assert answer.status_code == 303, answer.content.decode()
    assert alice_assoc().max_wall_duration_per_job == 5
    page = client.get(answer["Location"]).content.decode()
    assert "MaxWall=5 set" in page
    entries = LogEntry.objects.get_for_object(alice_assoc()).filter(cid="limit-req")
    assert entries.filter(additional_data__action="limit_change", additional_data__reason="fair use").exists()
    assert entries.filter(additional_data__isnull=True).exists()  # the row's own entry

    page = client.get(PAGE, {**ALICE, "option": "MaxWall", "value": "-1"}).content.decode()
    released = page.split('id="preview-released"')[1].split("</table>")[0]
    assert f'data-job-id="{science}"' in released
    assert Job.objects.get(pk=science).state == "PENDING"


def test_a_qos_limit_changes(science, client, users):
    client.force_login(users["admin"])
    data = {"qos": "normal", "option": "MaxWall", "value": "30", "confirmed": "1"}
    assert client.post(f"{PAGE}apply/", data).status_code == 303
    assert QOS.objects.get(name="normal").max_wall_duration_per_job == 30


def test_bad_input_is_400_and_users_get_403(science, client, users):
    client.force_login(users["admin"])
    answer = client.post(f"{PAGE}apply/", {**ALICE, "option": "NoSuchLimit", "value": "1", "confirmed": "1"})
    assert answer.status_code == 400 and "NoSuchLimit" in answer.content.decode()
    answer = client.get(PAGE, {**ALICE, "option": "MaxWall", "value": "soon"})
    assert answer.status_code == 400
    assert client.get(PAGE, {"account": "nosuch"}).status_code == 404
    client.force_login(users["alice"])
    assert client.get(PAGE, ALICE).status_code == 403
    assert (
        client.post(
            f"{PAGE}apply/", {**ALICE, "option": "MaxWall", "value": "1000", "confirmed": "1"}
        ).status_code
        == 403
    )
    assert alice_assoc().max_wall_duration_per_job is None
