"""The accounting at start and reconfigure, and the reset calendar (issue #13 point 6):
PriorityUsageResetPeriod=NOW clears usage once, not every cycle; running jobs are booked
again with the current UsageFactor; reset boundaries are the controller's local time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cluster.models import Job
from cluster.services.configuration import config_load
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from limits import selectors
from limits.core.usage import EMPTY, assoc_key
from limits.models import JobAccounting, LimitsState
from limits.services import record_add, record_modify, usage_cycle_run, usage_set
from tests.limits.test_services import enforce, register

pytestmark = pytest.mark.django_db


@pytest.fixture
def reconfigure(conf_dir, settings, demo):
    """Load the demo configuration plus ``extra`` slurm.conf lines, as a reconfigure does."""
    settings.CONF_DIR = conf_dir
    base = (conf_dir / "slurm.conf").read_text()

    def load(extra: str = "") -> None:
        (conf_dir / "slurm.conf").write_text(base + "\n" + extra + "\n")
        config_load(path=conf_dir / "slurm.conf", actor="admin")

    return load


@pytest.fixture
def science(demo, users):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science"])
    return admin


def cpu_seconds(account: str = "science") -> float:
    return selectors.usage_records().get(assoc_key(account), EMPTY).tres_seconds.get("cpu", 0.0)


def running_job(users, now) -> Job:
    register(now)
    job_id = job_submit(user=users["alice"], spec={"wrap": "sleep 1000", "ntasks": 4}, now=now).job_ids[0]
    schedule_pass(now=now)
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    return job


def test_reset_period_now_clears_once_at_reconfigure_not_every_cycle(reconfigure, science, users):
    reconfigure("AccountingStorageEnforce=limits\nPriorityUsageResetPeriod=NOW\nPriorityDecayHalfLife=0")
    now = datetime.now(UTC)
    running_job(users, now)
    usage_cycle_run(now=now)
    usage_cycle_run(now=now + timedelta(minutes=3))
    usage_cycle_run(now=now + timedelta(minutes=6))
    # 4 CPUs for 6 minutes, kept from one cycle to the next.
    assert cpu_seconds() == pytest.approx(4 * 360)
    reconfigure("AccountingStorageEnforce=limits\nPriorityUsageResetPeriod=NOW\nPriorityDecayHalfLife=0")
    assert cpu_seconds() == 0.0
    later = datetime.fromtimestamp(LimitsState.objects.get(pk=1).last_cycle, UTC) + timedelta(minutes=1)
    usage_cycle_run(now=later)
    assert cpu_seconds() == pytest.approx(4 * 60)  # only what ran after the reset


def test_running_jobs_are_rebooked_with_the_current_usage_factor(reconfigure, science, users):
    reconfigure("AccountingStorageEnforce=limits")
    job = running_job(users, datetime.now(UTC))
    assert JobAccounting.objects.get(job=job).usage_factor == 1.0
    record_modify(actor=science, entity="qos", where=["name=normal"], options=["UsageFactor=2"])
    # A change of UsageFactor does not rescale what a running job has booked ...
    assert JobAccounting.objects.get(job=job).usage_factor == 1.0
    # ... until slurmctld restarts or is reconfigured.
    reconfigure("AccountingStorageEnforce=limits")
    assert JobAccounting.objects.get(job=job).usage_factor == 2.0


@pytest.mark.parametrize(("zone", "reset"), [("Europe/Paris", True), ("UTC", False)])
def test_daily_reset_happens_at_the_controllers_local_midnight(science, settings, zone, reset):
    settings.TIME_ZONE = zone
    enforce("limits", PriorityUsageResetPeriod="DAILY", PriorityDecayHalfLife="0")
    before = datetime(2026, 3, 10, 22, 30, tzinfo=UTC)  # 23:30 in Paris
    LimitsState.objects.update_or_create(
        pk=1, defaults={"last_cycle": before.timestamp(), "last_reset": before.timestamp()}
    )
    usage_set(actor=None, key=assoc_key("science"), tres_seconds={"cpu": 600.0}, raw_usage=10.0)
    usage_cycle_run(now=before + timedelta(hours=1))  # 00:30 in Paris, 23:30 in UTC
    assert cpu_seconds() == (0.0 if reset else 600.0)
