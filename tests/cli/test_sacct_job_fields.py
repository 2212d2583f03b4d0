"""sacct's Cluster, Constraints, Licenses, Priority, Reservation, Restarts and Suspended,
which fsched keeps with the job: ``sacct -o`` refused them as "not kept by fsched", so a
site's script asking for one failed.  As sacct prints them (src/sacct/print.c): the
cluster on every line, the others on the job's line (Suspended on the steps' too)."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db(transaction=True)

FIELDS = "JobID,Cluster,Constraints,Licenses,Priority,Reservation,Restarts,Suspended,State"


def test_the_job_fields_sacct_prints(users, demo, live_cli):
    status, out, err = live_cli(
        "alice", "sbatch", "--parsable", "-C", "rack1", "-L", "fluent:2", "--begin=now+3600", "--wrap", "true"
    )
    assert (status, err) == (0, ""), err
    job_id = int(out)
    schedule_pass()
    Job.objects.filter(pk=job_id).update(restart_count=2, paused_seconds=75)
    status, out, err = live_cli("alice", "sacct", "-j", str(job_id), "-n", "-P", "-o", FIELDS)
    assert (status, err) == (0, ""), err
    assert out == f"{job_id}|demo|rack1|fluent:2|1||2|00:01:15|PENDING\n"


def test_a_field_fsched_does_not_keep_is_still_refused(users, demo, live_cli):
    status, out, err = live_cli("alice", "sacct", "-o", "JobID,McsLabel")
    assert status == 1 and out == ""
    assert err == 'sacct: error: Invalid field requested: "McsLabel" (McsLabel is not kept by fsched)\n'
