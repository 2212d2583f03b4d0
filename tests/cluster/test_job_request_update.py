"""``scontrol update JobId=N`` of a pending job's request (StartTime, Features,
ReqNodeList, ExcNodeList, NumNodes, MinMemoryNode) and Comment: stored as sbatch's options
are, refused with slurmctld's words and nothing changed, and seen by the next pass."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.models import Event, Job
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_update
from cluster.services.scheduling import schedule_pass
from tests.cluster.test_dependencies import register, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def pending(demo, users):
    register()
    return submit(users["alice"], hold=True, partition="debug", time="5")


def _update(users, job_id: int, **changes) -> Job:
    return job_update(actor=users["alice"], job_id=job_id, changes=changes)


def test_the_request_fields_are_stored_as_sbatch_would_store_them(pending, users):
    job = _update(
        users,
        pending,
        begin="now+1hour",
        features="rack1",
        req_nodes="node02,node03",
        exc_nodes="node01",
        nodes="2-3",
        mem="1G",
        comment="moved by hand",
    )
    job.refresh_from_db()
    assert job.begin_time > timezone.now() + timedelta(minutes=59)
    assert job.eligible_time == job.begin_time
    assert (job.features, job.req_nodes, job.exc_nodes) == ("rack1", "node[02-03]", "node01")
    assert (job.min_nodes, job.max_nodes, job.mem_per_node, job.mem_per_cpu) == (2, 3, 1024, None)
    assert job.comment == "moved by hand"
    # The change is recorded with who made it, before and after.
    event = Event.objects.filter(job_id=pending, reason__startswith="update").latest("id")
    assert event.user == "alice" and event.detail["after"]["req_nodes"] == "node[02-03]"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"req_nodes": "node99"}, "Invalid node name specified: node99"),
        ({"nodes": "0"}, "Node count specification invalid"),
        ({"nodes": "100"}, "Node count specification invalid"),
        ({"features": "nosuch"}, "Invalid feature specification"),
        ({"mem": "lots"}, "Invalid MinMemoryNode value: lots"),
        ({"mem": "100000"}, "Memory specification can not be satisfied"),
        ({"begin": "someday"}, "Invalid time specification: someday"),
        ({"req_nodes": "node02", "exc_nodes": "node02"}, "Requested node configuration is not available"),
        # debug is node[01-08]: a node outside it can never hold the job there.
        ({"req_nodes": "node20"}, "Requested node configuration is not available"),
    ],
)
def test_a_bad_value_is_refused_and_nothing_changes(pending, users, changes, message):
    before = Job.objects.filter(pk=pending).values().get()
    with pytest.raises(ServiceError) as refused:
        _update(users, pending, **changes)
    assert message in (str(refused.value), refused.value.err_msg)
    assert Job.objects.filter(pk=pending).values().get() == before


def test_a_running_job_s_request_is_not_changed_but_its_comment_is(demo, users):
    register()
    job_id = submit(users["alice"], partition="debug", time="5")
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == "RUNNING"
    with pytest.raises(ServiceError, match="Job is no longer pending execution"):
        _update(users, job_id, nodes="2")
    assert _update(users, job_id, comment="still running").comment == "still running"


def test_the_next_pass_honours_the_new_request(pending, users):
    from cluster.services.jobs import job_release

    _update(users, pending, req_nodes="node05", begin="now")
    job_release(actor=users["alice"], job_id=pending)
    schedule_pass()
    job = Job.objects.get(pk=pending)
    assert (job.state, job.node_list) == ("RUNNING", "node05")

    later = submit(users["alice"], partition="debug", time="5")
    _update(users, later, begin="now+1hour")
    schedule_pass()
    assert Job.objects.get(pk=later).reason == "BeginTime"


def test_another_user_may_not_update_the_job(pending, users):
    from cluster.services.errors import PermissionDenied

    with pytest.raises(PermissionDenied):
        job_update(actor=users["bob"], job_id=pending, changes={"comment": "mine now"})
