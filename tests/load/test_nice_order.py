"""The load check's stop order sees the nice (#14 point 6): two jobs started by the same pass
on the spec's compute1, of the same base priority, differing only by ``sbatch --nice``; the
niced one is stopped first, though at equal priority the later one would be."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Job, Node
from cluster.services.configuration import config_load
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from load.services import load_check
from tests.load.test_check import report
from tests.load.test_config import EXAMPLE, write

# Multifactor with only the partition's factor: every job of the partition has 1000.
WEIGHTS = "PriorityWeightPartition=1000\nPriorityWeightAge=0\nPriorityWeightJobSize=0\n"
# The example's slurm.conf names no PriorityType: Slurm's default, multifactor.
BASIC = "PriorityType=priority/basic\n"


def start_both(user, tmp_path, *, conf: str, nice: int) -> tuple[int, int]:
    path = write(tmp_path, EXAMPLE.replace(" State=CLOUD", ""))
    path.write_text(path.read_text() + conf)
    config_load(path=path)
    Node.objects.filter(name="compute1").update(base_state=NodeBase.IDLE, flags=NodeFlag.NONE)
    spec = {"wrap": "sleep 100", "work_dir": "/tmp", "partition": "partition-U7KH5"}
    niced = job_submit(user=user, spec={**spec, "nice": nice}).job_ids[0]
    plain = job_submit(user=user, spec=spec).job_ids[0]
    schedule_pass()
    jobs = Job.objects.in_bulk([niced, plain])
    assert (jobs[niced].state, jobs[plain].state) == ("RUNNING", "RUNNING")
    assert jobs[niced].start_time == jobs[plain].start_time
    # Both ran for some checks already (a job just started is never stopped).
    Job.objects.filter(pk__in=[niced, plain]).update(start_time=F("start_time") - timedelta(minutes=10))
    return niced, plain


@pytest.mark.parametrize(
    ("conf", "nice", "priorities"),
    [
        # Equal base priorities: the tie would stop the later job, the nice decides instead.
        (WEIGHTS, 10, (990, 1000)),
        # priority/basic: submit order gives the first 1 more, its nice of 2 takes 2 off.
        (BASIC, 2, None),
    ],
    ids=["multifactor", "basic"],
)
def test_the_niced_job_is_stopped_first_and_continued_last(users, tmp_path, conf, nice, priorities):
    niced, plain = start_both(users["alice"], tmp_path, conf=conf, nice=nice)
    jobs = Job.objects.in_bulk([niced, plain])
    if priorities is not None:
        assert (jobs[niced].priority, jobs[plain].priority) == priorities
    else:
        assert jobs[plain].priority - jobs[niced].priority == nice - 1
    report("compute1", mem=1100)
    assert load_check() == f"drain compute1, stop job {niced} on compute1"
    assert load_check() == "nothing to do"  # the last job running is never stopped
    assert Job.objects.get(pk=plain).state == "RUNNING"
    report("compute1", mem=5000)
    assert load_check() == f"continue job {niced} on compute1"


def test_a_new_nice_of_a_running_job_reorders_the_stops(users, tmp_path):
    from cluster.services.jobs import job_update

    niced, _plain = start_both(users["alice"], tmp_path, conf=BASIC, nice=0)
    # As started, the later job (plain) has the lower priority; a nice on the first one
    # moves its priority at once under priority/basic, as slurmctld's update_job does.
    job_update(actor=users["alice"], job_id=niced, changes={"nice": 50})
    report("compute1", mem=1100)
    assert load_check() == f"drain compute1, stop job {niced} on compute1"
