"""What a submission gets from the limits beyond the checks (issue #13 point 6): every
array task counted by the submit limits, and the time limit a MaxWall gives a job that
asks none (Slurm's acct_policy_validate / _set_time_limit)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from cluster.models import Job
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from limits.services import record_add, record_modify
from tests.limits.test_services import enforce, register

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


# --------------------------------------------------------------------------- time limits


def test_qos_max_wall_sets_the_time_limit_of_a_job_without_one(science, users):
    record_modify(actor=science, entity="qos", where=["name=normal"], options=["MaxWall=5"])
    register(timezone.now())
    (job,) = submit(users)  # debug: DefaultTime=10, longer than the QOS allows
    assert job.time_limit == 5
    schedule_pass()
    job.refresh_from_db()
    assert job.state == "RUNNING"
    (asked,) = submit(users, time="3")
    assert asked.time_limit == 3  # a limit the job asks for is its own


def test_association_max_wall_sets_the_time_limit_instead_of_refusing(science, users):
    record_modify(actor=science, entity="user", where=["name=alice"], options=["MaxWall=20"])
    (job,) = submit(users, partition="batch")  # DefaultTime=1:00:00
    assert job.time_limit == 20
    (short,) = submit(users)  # debug's DefaultTime=10 is within MaxWall: it stands
    assert short.time_limit == 10
    with pytest.raises(ServiceError, match=r"^Job violates accounting/QOS policy"):
        submit(users, partition="batch", time="30")  # asked for more than MaxWall


def test_the_qos_max_wall_comes_before_the_association_s(science, users):
    record_modify(actor=science, entity="user", where=["name=alice"], options=["MaxWall=4"])
    record_modify(actor=science, entity="qos", where=["name=normal"], options=["MaxWall=8"])
    (job,) = submit(users)
    assert job.time_limit == 8


@pytest.fixture
def no_default_time(conf_dir, settings, demo):
    """A partition with MaxTime=120 and no DefaultTime."""
    settings.CONF_DIR = conf_dir
    conf = conf_dir / "slurm.conf"
    conf.write_text(conf.read_text() + "\nPartitionName=plain Nodes=node[01-04] MaxTime=120\n")
    config_load(path=conf)


def test_without_default_time_max_wall_wins_bounded_by_max_time(no_default_time, science, users):
    (job,) = submit(users, partition="plain")
    assert job.time_limit == 120  # no limit sets one: the partition's MaxTime
    record_modify(actor=science, entity="qos", where=["name=normal"], options=["MaxWall=90"])
    (job,) = submit(users, partition="plain")
    assert job.time_limit == 90
    # A MaxWall above MaxTime is bounded by it, unless the QOS says PartitionTimeLimit.
    record_modify(actor=science, entity="qos", where=["name=normal"], options=["MaxWall=600"])
    (job,) = submit(users, partition="plain")
    assert job.time_limit == 120
    record_modify(actor=science, entity="qos", where=["name=normal"], options=["Flags=PartitionTimeLimit"])
    (job,) = submit(users, partition="plain")
    assert job.time_limit == 600
