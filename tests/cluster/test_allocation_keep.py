"""salloc --no-shell in the controller (cluster/services/allocations.py, allocation_keep):
the granted allocation loses its holder, so no lease ends it (Slurm's salloc leaves
slurmctld no port to ping); a request not granted, a batch job or another user's job is
refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.models import AllocationHolder, Event, Job
from cluster.services.allocations import expire_holders
from tests.cluster.test_allocations import _allocate, _running
from tests.cluster.test_lifecycle import submit

pytestmark = pytest.mark.django_db


def keep(api, who: str, job_id: int):
    return api(who).post(f"/api/jobs/{job_id}/allocation/keep/", format="json")


def test_a_kept_allocation_outlives_its_lease(demo, users, api):
    job = _running(api)
    answer = keep(api, "alice", job.id)
    assert answer.status_code == 200, answer.content
    assert not AllocationHolder.objects.filter(job_id=job.id).exists()
    assert Event.objects.filter(job_id=job.id, reason="allocation kept (salloc --no-shell)").exists()
    assert expire_holders(now=timezone.now() + timedelta(hours=1)) == []
    assert Job.objects.get(pk=job.id).state == "RUNNING"
    # Asked again: nothing more to do.
    assert keep(api, "alice", job.id).status_code == 200
    assert Event.objects.filter(job_id=job.id, reason__startswith="allocation kept").count() == 1


def test_only_a_granted_allocation_of_one_s_own_is_kept(demo, users, api):
    pending = _allocate(api)  # no node registered: it stays pending
    answer = keep(api, "alice", pending)
    assert (answer.status_code, answer.json()["error"]) == (400, "Job is pending execution")
    assert AllocationHolder.objects.filter(job_id=pending).exists()
    batch = submit(users["alice"])
    assert "is a batch job" in keep(api, "alice", batch).json()["error"]
    assert keep(api, "bob", pending).status_code in (403, 404)
    Job.objects.filter(pk=pending).update(state="CANCELLED")
    answer = keep(api, "alice", pending)
    assert answer.json()["error"] == "Job/step already completing or completed"
