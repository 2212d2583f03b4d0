"""EligibleTime (and scontrol's AccrueTime) as Slurm sets them: a job with a dependency is
not eligible until the pass finds the dependency satisfied; --begin's time is the job's
eligible time from its submission; any other job is eligible when submitted."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cli.scontrol import job_record
from cluster.models import Job
from cluster.services.scheduling import schedule_pass
from tests.cluster.test_dependencies import finish, register, submit

pytestmark = pytest.mark.django_db


def _eligible(job_id: int):
    return Job.objects.get(pk=job_id).eligible_time


def _line(record, key: str) -> str:
    return next(value for line in record for name, value in line if name == key)


def test_a_dependent_job_becomes_eligible_when_its_dependency_is_satisfied(demo, users, api):
    register()
    alice = users["alice"]
    first = submit(alice, time="5")
    second = submit(alice, dependency=f"afterok:{first}")
    assert _eligible(first) is not None and _eligible(second) is None
    schedule_pass()
    assert Job.objects.get(pk=first).state == "RUNNING" and _eligible(second) is None
    shown = job_record(api("alice").get(f"/api/jobs/{second}/").json())
    assert (_line(shown, "EligibleTime"), _line(shown, "AccrueTime")) == ("Unknown", "Unknown")

    finish(first)
    before = timezone.now()
    schedule_pass()
    job = Job.objects.get(pk=second)
    assert job.dependency == "" and job.eligible_time >= before
    shown = job_record(api("alice").get(f"/api/jobs/{second}/").json())
    eligible_line = _line(shown, "EligibleTime")
    assert eligible_line != "Unknown" and _line(shown, "AccrueTime") == eligible_line


def test_a_never_satisfied_dependency_leaves_the_job_not_eligible(demo, users):
    register()
    alice = users["alice"]
    first = submit(alice, time="5")
    second = submit(alice, dependency=f"afternotok:{first}")
    schedule_pass()
    finish(first)
    schedule_pass()
    assert Job.objects.get(pk=second).reason == "DependencyNeverSatisfied"
    assert _eligible(second) is None


def test_begin_is_the_eligible_time_and_accrual_waits_for_it(demo, users, api):
    register()
    alice = users["alice"]
    later = submit(alice, begin="now+1hour")
    plain = submit(alice, hold=True)
    eligible = _eligible(later)
    assert eligible is not None and eligible > timezone.now() + timedelta(minutes=59)
    assert _eligible(plain) is not None  # a held job is eligible: only its priority is 0
    shown = job_record(api("alice").get(f"/api/jobs/{later}/").json())
    assert _line(shown, "EligibleTime") != "Unknown" and _line(shown, "AccrueTime") == "Unknown"
