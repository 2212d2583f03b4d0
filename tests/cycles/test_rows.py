"""The cycles as rows an administrator edits (issue 15, point 5): one django-celery-beat
PeriodicTask per cycle of cluster.cycles.periodic(), defaults from slurm.conf or the
settings, edits in the admin audited and kept across a reconfigure until reset."""

from __future__ import annotations

import json
import math
from datetime import timedelta

import pytest
from auditlog.models import LogEntry
from celery import current_app
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone
from django_celery_beat.models import PeriodicTask, PeriodicTasks
from django_celery_beat.schedulers import ModelEntry

from cluster import cycles
from cluster.services.configuration import config_load
from cycles import rows
from cycles.models import CycleStatus
from tests.cluster.database_lock import write_lock


@pytest.fixture
def staff(client, users, demo):
    client.force_login(users["admin"])
    return client


def _status(name: str) -> CycleStatus:
    return CycleStatus.objects.select_related("task__interval").get(task__name=name)


def _change(client, name: str, **data: object):
    status = _status(name)
    return client.post(f"/admin/cycles/cyclestatus/{status.pk}/change/", data)


def test_every_cycle_is_a_beat_row_after_migrate(db):
    names = set(cycles.periodic())
    assert {"schedule", "backfill", "health", "power", "usage", "load", "maintenance"} <= names
    tasks = {t.name: t for t in PeriodicTask.objects.filter(task=rows.TASK).select_related("interval")}
    assert set(tasks) == names
    for name, (_func, interval) in cycles.periodic().items():
        assert json.loads(tasks[name].args) == [name]
        assert rows.interval_seconds(tasks[name].interval) == interval
        assert tasks[name].enabled


def test_slurm_conf_sets_the_default_and_a_reconfigure_moves_rows_nobody_edited(
    db, conf_dir, settings, django_capture_on_commit_callbacks
):
    settings.CONF_DIR = conf_dir
    conf = conf_dir / "slurm.conf"
    conf.write_text(conf.read_text() + "SchedulerParameters=sched_interval=15,bf_interval=40\n")
    with django_capture_on_commit_callbacks(execute=True):
        config_load(path=conf)
    schedule, backfill = _status("schedule"), _status("backfill")
    assert rows.interval_seconds(schedule.task.interval) == 15
    assert rows.source(schedule) == "slurm.conf (SchedulerParameters=sched_interval)"
    assert rows.interval_seconds(backfill.task.interval) == 40

    # An administrator edits the scheduler's row; slurm.conf changes both values.
    rows.cycle_update(status=schedule, seconds=7, enabled=True)
    conf.write_text(
        conf.read_text().replace("sched_interval=15,bf_interval=40", "sched_interval=20,bf_interval=-1")
    )
    with django_capture_on_commit_callbacks(execute=True):
        config_load(path=conf)
    schedule, backfill = _status("schedule"), _status("backfill")
    assert rows.interval_seconds(schedule.task.interval) == 7  # the edit wins...
    assert rows.source(schedule) == "admin"
    assert schedule.default_seconds == 20  # ...over the new default, kept for a reset
    assert not backfill.task.enabled  # bf_interval=-1: Slurm's "disabled"
    assert rows.source(backfill) == "slurm.conf (SchedulerParameters=bf_interval)"

    rows.cycle_reset(status=schedule)
    schedule = _status("schedule")
    assert (rows.interval_seconds(schedule.task.interval), rows.source(schedule)) == (
        20,
        schedule.default_source + " (SchedulerParameters=sched_interval)",
    )


def test_the_admin_lists_the_cycles_with_their_source_and_last_run(staff):
    cycles.run_named("health")  # as beat's task runs it
    page = staff.get("/admin/cycles/cyclestatus/").content.decode().lower()
    for text in ("schedule", "backfill", "power", "load", "usage", "interval from", "down=0"):
        assert text in page
    health = _status("health")
    assert health.last_run is not None and health.last_duration is not None
    form = staff.get(f"/admin/cycles/cyclestatus/{health.pk}/change/").content.decode()
    assert 'name="interval"' in form and 'name="enabled"' in form
    assert rows.source(health) in form  # "default", or "environment (FSCHED_HEALTH_INTERVAL)"
    assert health.last_result.startswith("down=0")


def test_an_edit_in_the_admin_is_in_force_for_the_embedded_thread_and_audited(staff, users):
    reader = rows.BeatRows()
    assert reader.plan()["schedule"] == (2.0, True)
    marker = PeriodicTasks.last_change()

    response = _change(staff, "schedule", interval="0.5", enabled="")
    assert response.status_code == 302, response.content.decode()[:2000]

    assert PeriodicTasks.last_change() > marker  # what the thread and beat look at
    assert reader.plan()["schedule"] == (0.5, False)
    schedule = _status("schedule")
    assert rows.source(schedule) == "admin"
    entry = LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(PeriodicTask), object_pk=str(schedule.task.pk)
    ).latest("timestamp")
    assert entry.actor == users["admin"]
    assert set(entry.changes_dict) == {"interval", "enabled"}


def test_a_reset_from_the_admin_brings_the_default_back(staff):
    _change(staff, "backfill", interval="60", enabled="on")
    status = _status("backfill")
    response = staff.post(
        "/admin/cycles/cyclestatus/", {"action": "reset_to_default", "_selected_action": [status.pk]}
    )
    assert response.status_code == 302
    status = _status("backfill")
    assert rows.interval_seconds(status.task.interval) == 5.0
    assert rows.source(status) == "default"


@pytest.mark.parametrize("interval", ["0", "-1", "abc", "", "0.01", "nan"])
def test_a_bad_interval_is_refused_and_changes_nothing(staff, interval):
    before = _status("schedule").task.interval_id
    response = _change(staff, "schedule", interval=interval, enabled="on")
    assert response.status_code == 200  # the form again, with its error
    assert "errorlist" in response.content.decode()
    assert _status("schedule").task.interval_id == before


def test_only_staff_edit_the_cycles(client, users, demo):
    client.force_login(users["alice"])
    response = _change(client, "schedule", interval="60", enabled="on")
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert rows.interval_seconds(_status("schedule").task.interval) == 2.0
    staff = users["admin"]
    client.force_login(staff)
    assert client.get("/admin/cycles/cyclestatus/add/").status_code == 403
    assert (
        client.post(
            f"/admin/cycles/cyclestatus/{_status('schedule').pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )


def test_disabling_from_beat_s_own_page_is_audited_and_seen(staff, users):
    reader = rows.BeatRows()
    task = _status("load").task
    response = staff.post(
        "/admin/django_celery_beat/periodictask/", {"action": "disable_tasks", "_selected_action": [task.pk]}
    )
    assert response.status_code == 302
    assert reader.plan()["load"][1] is False
    entry = LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(PeriodicTask), object_pk=str(task.pk)
    ).latest("timestamp")
    assert (entry.actor, entry.changes_dict["enabled"]) == (users["admin"], ["True", "False"])
    assert rows.source(_status("load")) == "default"  # the interval itself was not edited


def test_the_embedded_thread_plans_with_the_rows_and_keeps_them_through_a_database_error(transactional_db):
    thread = cycles.EmbeddedCycles()  # not started: its plan is read as its loop reads it
    defaults = cycles.periodic()
    rows.cycle_update(status=_status("schedule"), seconds=45, enabled=True)
    rows.cycle_update(status=_status("health"), seconds=2, enabled=False)
    plan = thread._plan(defaults)
    assert plan["schedule"] == (45.0, True)
    assert plan["health"] == (2.0, False)
    assert set(plan) == set(defaults)

    rows.cycle_update(status=_status("schedule"), seconds=50, enabled=True)  # the marker moves
    thread._plan_read_at = -cycles.ROWS_POLL  # due for a look at the rows
    with write_lock("django_celery_beat_periodictask"):  # the rows unreadable
        assert thread._plan(defaults)["schedule"] == (45.0, True)  # the last values read
    thread._plan_read_at = -cycles.ROWS_POLL
    assert thread._plan(defaults)["schedule"] == (50.0, True)


def test_a_failed_run_is_recorded_on_its_row(db):
    def broken() -> str:
        raise RuntimeError("no agent answered")

    with pytest.raises(RuntimeError):
        cycles.run_recorded("usage", broken)
    assert _status("usage").last_result == "failed: RuntimeError: no agent answered"
    assert cycles.run_recorded("usage", lambda: "busy") == "busy"  # nothing ran: not a run
    assert _status("usage").last_result == "failed: RuntimeError: no agent answered"


def test_a_cycle_reads_its_interval_in_force(db):
    assert cycles.interval_in_force("load") == 30.0  # FSCHED_LOAD_INTERVAL's default
    rows.cycle_update(status=_status("load"), seconds=90, enabled=True)
    # The load check's "one check interval" before it stops a job is the edited one.
    assert cycles.interval_in_force("load") == 90.0


def test_power_save_interval_is_a_row_with_slurm_conf_as_its_default(
    db, conf_dir, settings, django_capture_on_commit_callbacks
):
    from power.models import PowerState
    from power.services import power_change_cycle, power_save_cycle

    settings.CONF_DIR = conf_dir
    with django_capture_on_commit_callbacks(execute=True):
        config_load(path=conf_dir / "slurm.conf")  # the demo: power_save_interval=2
    power_save = _status("power_save")
    assert rows.interval_seconds(power_save.task.interval) == 2
    assert rows.source(power_save) == "slurm.conf (SlurmctldParameters=power_save_interval)"
    # An administrator sets it in the admin: the row's interval is power_save_interval now.
    rows.cycle_update(status=power_save, seconds=45, enabled=True)
    assert rows.interval_seconds(_status("power_save").task.interval) == 45
    assert rows.source(_status("power_save")) == "admin"

    # The row's run is the power-save cycle itself; the 1 s `power` row runs it sooner only
    # after node states changed.
    power_save_cycle()
    first = PowerState.current().last_run
    assert power_change_cycle() == "not due"
    # A change, past the demo's power_save_min_interval=1.
    PowerState.objects.filter(pk=1).update(dirty=True, last_run=first - timedelta(seconds=2))
    first = PowerState.current().last_run
    assert power_change_cycle() != "not due"
    assert PowerState.current().last_run > first and not PowerState.current().dirty
    assert power_save_cycle() != "not due"


def _beat_expiry(name: str) -> int | None:
    """The ``expires`` beat's DatabaseScheduler sends the cycle's runs with."""
    return ModelEntry(PeriodicTask.objects.get(name=name), app=current_app).options.get("expires")


def test_a_run_not_started_within_two_intervals_expires_so_a_backlog_never_runs(staff):
    assert _beat_expiry("schedule") == rows.EXPIRY_MIN_SECONDS  # every 2 s: 4 s, at least 5
    assert _change(staff, "schedule", interval="3600", enabled="on").status_code == 302
    assert _beat_expiry("schedule") == 7200
    assert _change(staff, "schedule", interval="0.5", enabled="on").status_code == 302
    assert _beat_expiry("schedule") == rows.EXPIRY_MIN_SECONDS
    for name, (_func, interval) in cycles.periodic().items():
        assert _beat_expiry(name) == max(5, math.ceil(2 * interval)), name


def test_rows_of_an_earlier_release_get_their_expiry_at_the_next_migrate(db):
    PeriodicTask.objects.filter(task=rows.TASK).update(expire_seconds=None)
    rows.synced_after_migrate()
    assert all(t.expire_seconds for t in PeriodicTask.objects.filter(task=rows.TASK))


def test_an_expiry_date_set_by_hand_on_beat_s_page_is_left_as_set(db):
    task = PeriodicTask.objects.get(name="health")
    task.expire_seconds = None
    task.expires = timezone.now() + timedelta(days=1)
    task.save()
    rows.synced_after_migrate()
    task.refresh_from_db()
    assert task.expire_seconds is None and task.expires is not None
