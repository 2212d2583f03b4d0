"""The job page's actions (#15 point 4): confirmation, permission, Slurm's errors, audit with
the request's correlation id."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry

from cluster.models import Job
from cluster.services.jobs import job_submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def pending(demo, users) -> Job:
    submitted = job_submit(
        user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "partition": "batch"}
    )
    job = Job.objects.get(pk=submitted.job_ids[0])
    # Keep it pending whatever a pass would do: the scheduler is not run in these tests.
    assert job.state == "PENDING"
    return job


def logged_in(client, user):
    client.force_login(user)
    return client


def post(client, job, action, htmx=False, **data):
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    url = f"/jobs/{job.pk}/actions/{action}/"
    return client.post(url, {"confirmed": "1", **data}, HTTP_X_REQUEST_ID="req-42", **extra)


def entries(job):
    return LogEntry.objects.get_for_object(job).filter(additional_data__action__isnull=False)


def test_the_page_shows_the_owner_the_actions_and_another_user_none(client, pending, users):
    page = logged_in(client, users["alice"]).get(f"/jobs/{pending.pk}/").content.decode()
    assert 'data-action="hold"' in page and 'data-action="time_limit"' in page
    assert "hx-confirm" in page and "csrfmiddlewaretoken" in page
    client.logout()
    page = logged_in(client, users["bob"]).get(f"/jobs/{pending.pk}/").content.decode()
    assert 'data-action="hold"' not in page


def test_without_confirmation_the_form_comes_back_and_nothing_changes(client, pending, users):
    c = logged_in(client, users["alice"])
    response = c.post(f"/jobs/{pending.pk}/actions/hold/", {"reason": "lunch"})
    assert response.status_code == 200
    body = response.content.decode()
    assert (
        f"Hold job {pending.pk}?" in body and 'name="confirmed" value="1"' in body and 'value="lunch"' in body
    )
    pending.refresh_from_db()
    assert pending.hold == "" and not entries(pending).exists()


def test_owner_holds_and_releases_with_a_message_and_an_audit_entry(client, pending, users):
    c = logged_in(client, users["alice"])
    response = post(c, pending, "hold", reason="waiting for data")
    assert response.status_code == 303 and response["Location"] == f"/jobs/{pending.pk}/"
    assert response["X-Request-ID"] == "req-42"
    pending.refresh_from_db()
    assert (pending.hold, pending.reason) == ("user", "JobHeldUser")
    page = c.get(f"/jobs/{pending.pk}/").content.decode()
    assert f"Job {pending.pk} held." in page
    assert 'data-action="release"' in page and 'data-action="hold"' not in page
    entry = entries(pending).get()
    assert entry.cid == "req-42" and entry.actor == users["alice"]
    assert entry.additional_data == {"action": "hold", "reason": "waiting for data"}
    assert entry.changes_dict["hold"] == ["", "user"]

    assert post(c, pending, "release").status_code == 303
    pending.refresh_from_db()
    assert pending.hold == "" and entries(pending).count() == 2


def test_another_user_is_refused_403_and_nothing_changes(client, pending, users):
    response = post(logged_in(client, users["bob"]), pending, "hold")
    assert response.status_code == 403
    assert "Access/permission denied" in response.content.decode()
    pending.refresh_from_db()
    assert pending.hold == "" and not entries(pending).exists()


def test_staff_holds_anyones_job_as_an_administrator(client, pending, users):
    assert post(logged_in(client, users["admin"]), pending, "hold").status_code == 303
    pending.refresh_from_db()
    assert (pending.hold, pending.reason) == ("admin", "JobHeldAdmin")
    # Slurm: a user cannot release an administrator's hold.
    client.logout()
    assert post(logged_in(client, users["alice"]), pending, "release").status_code == 403


def test_time_limit_lowered_by_the_owner_raised_only_by_staff(client, pending, users):
    c = logged_in(client, users["alice"])
    assert post(c, pending, "time_limit", time_limit="10").status_code == 303
    pending.refresh_from_db()
    assert pending.time_limit == 10
    assert "TimeLimit=10:00" in c.get(f"/jobs/{pending.pk}/").content.decode()
    assert entries(pending).get().changes_dict["time_limit"][1] == "10"
    assert post(c, pending, "time_limit", time_limit="20").status_code == 403
    client.logout()
    assert post(logged_in(client, users["admin"]), pending, "time_limit", time_limit="20").status_code == 303
    pending.refresh_from_db()
    assert pending.time_limit == 20


def test_bad_input_is_400_with_slurms_message(client, pending, users):
    c = logged_in(client, users["alice"])
    response = post(c, pending, "time_limit", time_limit="soon")
    assert response.status_code == 400
    assert "Invalid TimeLimit value: soon" in response.content.decode()
    assert post(c, pending, "time_limit").status_code == 400  # missing
    assert post(c, pending, "hold", reason="x" * 300).status_code == 400
    # Requeue of a pending job: Slurm's refusal.
    response = post(c, pending, "requeue")
    assert response.status_code == 400 and "Job is pending execution" in response.content.decode()
    assert not entries(pending).exists()


def test_htmx_gets_a_client_redirect_and_the_message_on_the_page(client, pending, users):
    c = logged_in(client, users["alice"])
    response = post(c, pending, "hold", htmx=True)
    assert response["HX-Redirect"] == f"/jobs/{pending.pk}/"
    response = post(c, pending, "requeue", htmx=True)
    assert response.status_code == 400 and response["HX-Redirect"] == f"/jobs/{pending.pk}/"
    page = c.get(f"/jobs/{pending.pk}/").content.decode()
    assert "Job is pending execution" in page


def test_owner_cancels(client, pending, users):
    assert post(logged_in(client, users["alice"]), pending, "cancel", reason="wrong input").status_code == 303
    pending.refresh_from_db()
    assert pending.state == "CANCELLED"
    assert entries(pending).get().additional_data["reason"] == "wrong input"


def test_anonymous_and_get_are_refused(client, pending):
    assert post(client, pending, "hold").status_code == 403
    assert client.get(f"/jobs/{pending.pk}/actions/hold/").status_code == 405
    assert post(client, pending, "nonsense").status_code == 404
