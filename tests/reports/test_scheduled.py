"""Scheduled reports: a user saves the report shown with a schedule; once its period has
ended and is rolled up the cycle renders it to a file kept for download (its owner's only)
and emails it when EMAIL_HOST is set; a second run renders nothing twice."""

from __future__ import annotations

import csv
import io

import pytest
from auditlog.models import LogEntry
from django.core import mail

from reports.extension import rollup_and_scheduled
from reports.models import ReportFile, SavedReport
from reports.scheduled import period_end_after, period_start, scheduled_reports_run
from reports.services import report_rollup
from tests.reports.history import at, make_history


def test_periods():
    assert period_end_after("daily", at(10)) == at(0, day=6)
    assert period_end_after("weekly", at(10)) == at(0, day=12)  # 5 January 2026 is a Monday
    assert period_end_after("monthly", at(10)) == at(0, day=1).replace(month=2)
    assert period_start("weekly", at(0, day=12)) == at(0)
    assert period_start("monthly", at(0, day=1).replace(month=2)) == at(0, day=1)
    assert period_start("daily", at(0, day=6)) == at(0)


@pytest.fixture
def saved(client, users, settings, db):
    make_history()
    users["admin"].email = "admin@example.org"
    users["admin"].save()
    client.force_login(users["admin"])
    answer = client.post("/reports/saved/", {"report": "usage", "schedule": "daily", "format": "csv"})
    assert answer.status_code == 302
    return SavedReport.objects.get()


def test_save_render_download_and_email(saved, client, users, settings):
    settings.EMAIL_HOST = "smtp.example.org"
    SavedReport.objects.filter(pk=saved.pk).update(next_run=at(0, day=6))  # saved on the 5th
    report_rollup(now=at(0, 30, day=6))
    assert scheduled_reports_run(now=at(0, 30, day=6)) == "1 scheduled reports"
    assert scheduled_reports_run(now=at(0, 40, day=6)) == "0 scheduled reports"
    rendered = ReportFile.objects.get()
    assert rendered.filename == "usage-2026-01-05-2026-01-05.csv" and rendered.emailed
    rows = list(csv.reader(io.StringIO(bytes(rendered.content).decode())))
    assert rows[1][:3] == ["root", "", "7.75"]
    assert SavedReport.objects.get().next_run == at(0, day=7)
    (message,) = mail.outbox
    assert message.to == ["admin@example.org"] and message.attachments[0][0] == rendered.filename
    page = client.get("/reports/").content.decode()
    assert f"/reports/files/{rendered.pk}/" in page
    got = client.get(f"/reports/files/{rendered.pk}/")
    assert got.status_code == 200 and bytes(got.content) == bytes(rendered.content)
    client.force_login(users["alice"])
    assert client.get(f"/reports/files/{rendered.pk}/").status_code == 404
    assert client.post(f"/reports/saved/{saved.pk}/delete/").status_code == 404


def test_not_before_the_period_is_rolled_up_and_no_email_without_a_host(saved, settings):
    settings.EMAIL_HOST = ""
    SavedReport.objects.filter(pk=saved.pk).update(next_run=at(0, day=6))
    report_rollup(now=at(23, 30))  # rolled to 23:00 on the 5th: the day is not whole yet
    assert scheduled_reports_run(now=at(0, 30, day=6)) == "0 scheduled reports"
    report_rollup(now=at(0, 30, day=6))
    assert rollup_and_scheduled().endswith("1 scheduled reports")
    assert not ReportFile.objects.get().emailed and not mail.outbox


def test_bad_input_and_deletion(saved, client):
    assert (
        client.post("/reports/saved/", {"report": "usage", "schedule": "hourly", "format": "csv"}).status_code
        == 400
    )
    assert (
        client.post("/reports/saved/", {"report": "nope", "schedule": "daily", "format": "csv"}).status_code
        == 400
    )
    assert (
        client.post("/reports/saved/", {"report": "usage", "schedule": "daily", "format": "pdf"}).status_code
        == 400
    )
    assert client.get("/reports/saved/").status_code == 405
    assert client.post(f"/reports/saved/{saved.pk}/delete/").status_code == 302
    assert not SavedReport.objects.exists()
    entries = LogEntry.objects.get_for_model(SavedReport).order_by("timestamp")
    assert [(e.action, e.actor.get_username()) for e in entries] == [
        (LogEntry.Action.CREATE, "admin"), (LogEntry.Action.DELETE, "admin"),
    ]  # fmt: skip


def test_someone_not_staff_schedules_their_own_usage(client, users, db):
    client.force_login(users["bob"])
    client.post(
        "/reports/saved/", {"report": "usage", "schedule": "weekly", "format": "json", "users": "alice"}
    )
    assert SavedReport.objects.get().users == "bob"
