"""priority/multifactor with the job's own nice (#14 point 6): the pass's multifactor object
takes each pending job's nice off its sum, and sprio's NICE is that nice."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.configuration import config_load
from cluster.services.jobs import job_submit, job_update
from cluster.services.nodes import node_update
from cluster.services.scheduling import schedule_pass

# No age or job size: equal jobs have equal priorities, whenever the pass runs.
WEIGHTS = "PriorityWeightPartition=10000\nPriorityWeightAge=0\nPriorityWeightJobSize=0\n"


@pytest.fixture
def weighted(db, settings, conf_dir):
    conf = conf_dir / "slurm.conf"
    conf.write_text(conf.read_text() + WEIGHTS)
    settings.CONF_DIR = conf_dir
    return config_load(path=conf)


def submit(user, **spec) -> int:
    spec = {"wrap": "true", "work_dir": "/tmp", "begin": "now+3600", **spec}
    return job_submit(user=user, spec={k: v for k, v in spec.items() if v is not None}).job_ids[0]


def test_multifactor_takes_the_job_s_nice_off(weighted, users, api):
    # Waiting on drained nodes, eligible: sprio shows them (not jobs whose --begin is ahead).
    node_update(actor=users["admin"], nodes="node[01-32]", state="DRAIN", reason="test")
    plain = submit(users["alice"], begin=None)
    niced = submit(users["alice"], nice=700, begin=None)
    schedule_pass()
    body = api("alice").get("/api/priority/").json()
    assert body["priority_type"] == "priority/multifactor"
    jobs = {j["job_id"]: j for j in body["jobs"]}
    assert (jobs[plain]["nice"], jobs[niced]["nice"]) == (0, 700)
    for job_id, job in jobs.items():
        total = job["age"] + job["fairshare"] + job["jobsize"] + job["partition_factor"] + job["qos"]
        assert job["priority"] == int(total - job["nice"])
        assert Job.objects.get(pk=job_id).priority == job["priority"]
    assert (jobs[plain]["priority"], jobs[niced]["priority"]) == (5000, 4300)  # debug: factor 1/2


def test_a_new_nice_counts_at_the_next_pass(weighted, users):
    job_id = submit(users["alice"])
    schedule_pass()
    before = Job.objects.get(pk=job_id).priority
    job_update(actor=users["alice"], job_id=job_id, changes={"nice": 250})
    # Multifactor recomputes it in the pass, not at the update (slurmctld's update_job
    # moves the priority at once only under priority/basic).
    assert Job.objects.get(pk=job_id).priority == before
    schedule_pass()
    assert Job.objects.get(pk=job_id).priority == before - 250
