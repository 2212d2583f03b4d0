"""What a submission gets from the limits beyond the checks (issue #13 point 6): every
array task counted by the submit limits, and the time limit a MaxWall gives a job that
asks none (Slurm's acct_policy_validate / _set_time_limit)."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from limits.services import record_add, record_modify
from tests.limits.test_services import enforce

pytestmark = pytest.mark.django_db


@pytest.fixture
def science(demo, users):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science"])
    enforce("limits")
    return admin


def submit(users, **spec) -> list[Job]:
    ids = job_submit(user=users["alice"], spec={"wrap": "true", **spec}).job_ids
    return list(Job.objects.filter(pk__in=ids).order_by("pk"))


# --------------------------------------------------------------------------- arrays


def test_max_submit_jobs_counts_every_task_of_an_array(science, users):
    record_modify(actor=science, entity="user", where=["name=alice"], options=["MaxSubmitJobs=10"])
    with pytest.raises(ServiceError) as err:
        submit(users, array="0-99")
    first, _, detail = str(err.value).partition("\n")
    assert first == "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    assert "MaxSubmitJobs=10" in detail and "100 array tasks" in detail
    assert not Job.objects.exists()
    with pytest.raises(ServiceError):
        submit(users, array="0-10")  # 11 tasks, one over
    assert len(submit(users, array="0-9")) == 10
    with pytest.raises(ServiceError, match=r"^Job violates accounting/QOS policy"):
        submit(users)


def test_grp_submit_jobs_counts_the_tasks_already_queued(science, users):
    record_modify(actor=science, entity="account", where=["name=science"], options=["GrpSubmitJobs=60"])
    assert len(submit(users, array="1-55")) == 55
    with pytest.raises(ServiceError, match=r"GrpSubmitJobs=60"):
        submit(users, array="1-6")
    assert len(submit(users, array="1-5")) == 5
