"""``scontrol update JobId=N Licenses=...``: a pending job's licenses are changed, checked
as a submission's are; a running job's are not (Slurm's hres.html, "Limitations")."""

from __future__ import annotations

import pytest

from cluster.models import Event, Job
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.jobs import job_release, job_update
from cluster.services.scheduling import schedule_pass
from tests.hres.test_services import hres_conf, submit  # noqa: F401 - the demo cluster with resources.yaml

pytestmark = pytest.mark.django_db


def test_a_pending_jobs_licenses_are_updated_and_it_runs_with_them(hres_conf, users):  # noqa: F811
    alice = users["alice"]
    job_id = submit(alice, licenses="flat:2", hold=True)
    job = job_update(actor=alice, job_id=job_id, changes={"licenses": "power:1000,fluent"})
    assert job.licenses == "power:1000,fluent:1"  # the stored form, as a submission's
    assert Event.objects.filter(job_id=job_id, reason="update licenses").exists()
    job_release(actor=alice, job_id=job_id)
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    assert job.licenses_alloc.startswith("power(")  # the new request was charged, not flat
    assert "fluent:1" in job.licenses_alloc and "flat" not in job.licenses_alloc


@pytest.mark.parametrize(
    ("licenses", "message"),
    [
        ("nosuch:1", "unknown license nosuch"),
        ("fluent:31", "only 30 configured"),
        ("power:1,power:2", "power requested twice"),
        ("fluent:1[a=b]", "only allowed on a hierarchical resource"),
        ("natural:1|flat:1", "cannot be requested with the | form"),
    ],
)
def test_a_pending_jobs_licenses_are_checked_as_at_submission(hres_conf, users, licenses, message):  # noqa: F811
    job_id = submit(users["alice"], licenses="flat:2", hold=True)
    with pytest.raises(ServiceError, match=message):
        job_update(actor=users["alice"], job_id=job_id, changes={"licenses": licenses})
    assert Job.objects.get(pk=job_id).licenses == "flat:2"


def test_licenses_can_be_cleared_but_not_changed_by_another_user(hres_conf, users):  # noqa: F811
    job_id = submit(users["alice"], licenses="flat:2", hold=True)
    with pytest.raises(PermissionDenied):
        job_update(actor=users["bob"], job_id=job_id, changes={"licenses": "flat:1"})
    assert job_update(actor=users["admin"], job_id=job_id, changes={"licenses": ""}).licenses == ""


def test_a_running_jobs_licenses_are_refused(hres_conf, users):  # noqa: F811
    job_id = submit(users["alice"], licenses="power:1000")
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == "RUNNING"
    with pytest.raises(ServiceError, match="Job is no longer pending execution"):
        job_update(actor=users["admin"], job_id=job_id, changes={"licenses": "power:2000"})
    job = Job.objects.get(pk=job_id)
    held = "power(rack1*1000,row1*1000,datacenter*1000):1000"
    assert (job.licenses, job.licenses_alloc) == ("power:1000", held)


def test_scontrol_update_licenses_through_the_api(hres_conf, users, api):  # noqa: F811
    job_id = submit(users["alice"], licenses="flat:2", hold=True)
    answer = api("alice").patch(f"/api/jobs/{job_id}/", {"licenses": "natural:3"}, format="json")
    assert answer.status_code == 200, answer.content
    assert Job.objects.get(pk=job_id).licenses == "natural:3"
    answer = api("alice").patch(f"/api/jobs/{job_id}/", {"licenses": "natural:x"}, format="json")
    assert answer.status_code == 400
    assert "Invalid license specification natural:x" in answer.json()["error"]
