"""``scontrol update JobId=N Account=/QOS=`` of a pending job: checked as a submission is
(the association, the QOS allowed, the submit limits) without counting the job itself;
refused with slurmctld's words and nothing changed; a running job keeps its account
(src/slurmctld/job_mgr.c, update_job: ESLURM_JOB_NOT_PENDING)."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit, job_update
from limits.services import record_add, record_modify
from limits.submit_counts import groups
from tests.limits.test_services import enforce, register

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree(demo, users):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="account", names=["physics", "chem"], options=["Parent=science"])
    record_add(actor=admin, entity="qos", names=["high"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=physics"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=chem"])
    record_add(actor=admin, entity="user", names=["bob"], options=["Account=science"])
    return admin


def held(user) -> int:
    return job_submit(user=user, spec={"wrap": "true", "hold": True, "time": "5"}).job_ids[0]


def update(user, job_id: int, **changes) -> Job:
    job_update(actor=user, job_id=job_id, changes=changes)
    return Job.objects.get(pk=job_id)


def test_a_pending_job_moves_to_another_account_of_its_user(tree, users):
    enforce("associations")
    job_id = held(users["alice"])
    assert Job.objects.get(pk=job_id).account == "physics"
    assert update(users["alice"], job_id, account="chem").account == "chem"
    # Blank: the user's default account again, as Slurm's empty Account= does.
    assert update(users["alice"], job_id, account="").account == "physics"
    # The submit counts follow the job (the triggers), once.
    counts = groups("alice", ["physics", "chem"], "normal")
    assert counts == {("alice", "physics", "debug", "normal"): 1}


def test_an_account_without_an_association_is_refused_and_nothing_changes(tree, users):
    enforce("associations")
    job_id = held(users["alice"])
    with pytest.raises(ServiceError, match=r"^Invalid account or account/partition combination specified"):
        update(users["alice"], job_id, account="science")
    assert Job.objects.get(pk=job_id).account == "physics"


def test_a_qos_the_association_does_not_allow_is_refused(tree, users):
    enforce("associations,qos")
    record_modify(actor=tree, entity="user", where=["name=alice"], options=["QOS=normal"])
    job_id = held(users["alice"])
    with pytest.raises(ServiceError, match=r"^Invalid qos specification"):
        update(users["alice"], job_id, qos="high")
    record_modify(actor=tree, entity="user", where=["name=alice"], options=["QOS+=high"])
    assert update(users["alice"], job_id, qos="high").qos == "high"
    assert update(users["alice"], job_id, qos="").qos == "normal"


def test_the_job_itself_is_not_counted_against_the_submit_limit(tree, users):
    enforce("limits,qos")
    record_modify(actor=tree, entity="account", where=["name=science"], options=["GrpSubmitJobs=1"])
    job_id = held(users["alice"])
    # science's one job, counted once in science's tree whichever child account it is in,
    # may still move between them (and back).
    assert update(users["alice"], job_id, account="chem").account == "chem"
    assert update(users["alice"], job_id, account="physics").account == "physics"
    record_modify(actor=tree, entity="account", where=["name=chem"], options=["GrpSubmitJobs=0"])
    with pytest.raises(ServiceError, match=r"^Job violates accounting/QOS policy"):
        update(users["alice"], job_id, account="chem")
    assert Job.objects.get(pk=job_id).account == "physics"


def test_a_running_job_keeps_its_account_and_qos(tree, users):
    enforce("associations")
    register()
    job_id = job_submit(user=users["alice"], spec={"wrap": "sleep 60", "time": "5"}).job_ids[0]
    Job.objects.filter(pk=job_id).update(state="RUNNING")
    with pytest.raises(ServiceError, match=r"^Job is no longer pending execution$"):
        update(users["alice"], job_id, account="chem")
    with pytest.raises(ServiceError, match=r"^Job is no longer pending execution$"):
        update(users["alice"], job_id, qos="high")
    # The QOS it has already is no change, as slurmctld takes it.
    assert update(users["alice"], job_id, qos="normal").qos == "normal"


def test_without_accounting_enforced_the_values_are_taken(demo, users):
    job_id = held(users["alice"])
    job = update(users["alice"], job_id, account="anything", qos="")
    assert (job.account, job.qos) == ("anything", "normal")


def test_through_the_api_as_scontrol_sends_it(tree, users, api):
    enforce("associations")
    job_id = held(users["alice"])
    answer = api("alice").patch(f"/api/jobs/{job_id}/", {"account": "chem"}, format="json")
    assert answer.status_code == 200 and answer.json()["account"] == "chem"
    answer = api("alice").patch(f"/api/jobs/{job_id}/", {"account": "science"}, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("Invalid account or account/partition combination specified")
    assert Job.objects.get(pk=job_id).account == "chem"


def test_a_partition_moved_to_is_checked_against_the_association(tree, users):
    enforce("associations")
    record_add(actor=tree, entity="user", names=["bob"], options=["Account=chem", "Partition=batch"])
    job_id = job_submit(
        user=users["bob"],
        spec={"wrap": "true", "hold": True, "time": "5", "account": "chem", "partition": "batch"},
    ).job_ids[0]
    with pytest.raises(ServiceError, match=r"^Invalid account or account/partition combination specified"):
        update(users["bob"], job_id, partition="debug")
    assert Job.objects.get(pk=job_id).partition == "batch"
    # With the account changed in the same update, the move is allowed.
    job = update(users["bob"], job_id, partition="debug", account="science")
    assert (job.partition, job.account) == ("debug", "science")
