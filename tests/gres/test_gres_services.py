"""GPUs on the demo cluster (node[05-08]: Gres=gpu:tesla:4, gres.conf beside slurm.conf):
submission, the pass's devices kept with the job, what the API and the commands show."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agent.gres_env import gres_environment
from cli import sbatch
from cli.scontrol import job_record, node_record, render_record
from cli.squeue import FIELDS as SQUEUE_FIELDS
from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from cluster.services.state import end_job, launch_payload
from slurmwords.agent_messages import LaunchJob

pytestmark = pytest.mark.django_db


def submit(users, **spec) -> Job:
    return Job.objects.get(pk=job_submit(user=users["alice"], spec={"wrap": "sleep 100", **spec}).job_ids[0])


def test_sbatch_sends_the_gpu_options():
    args = ["--gpus=2", "--gpus-per-node=tesla:1", "--gpus-per-task=1", "--cpus-per-gpu=2", "-G", "3"]
    opts = sbatch.merge_options(sbatch._namespace_dict(sbatch.build_parser().parse_args(args)), {}, {})
    body = sbatch.build_request(
        opts, script="#!/bin/sh\n", script_name="j", script_args=[], environ={}, cwd="/"
    )
    assert (body["gpus"], body["gpus_per_node"], body["gpus_per_task"], body["cpus_per_gpu"]) == (
        "3",
        "tesla:1",
        "1",
        "2",
    )
    assert sbatch.env_options({"SBATCH_GPUS": "4"})["gpus"] == "4"


def test_requests_no_node_could_hold_are_refused_in_slurms_words(demo, users):
    for spec in ({"gpus": "5"}, {"gres": "gpu:a100:1"}, {"gpus_per_node": "1", "partition": "batch"}):
        with pytest.raises(ServiceError, match=r"^Requested node configuration is not available$"):
            submit(users, **spec)
    with pytest.raises(ServiceError, match=r"^Invalid generic resource \(gres\) specification"):
        submit(users, gres="fpga:1")
    with pytest.raises(ServiceError, match=r"^Invalid generic resource \(gres\) specification"):
        submit(users, gpus="two")
    with pytest.raises(ServiceError, match="--cpus-per-gpu is mutually exclusive with --cpus-per-task"):
        submit(users, gpus="1", cpus_per_gpu="2", cpus_per_task="2")
    assert not Job.objects.exists()


def test_jobs_get_distinct_devices_kept_with_them_until_they_end(demo, users, api):
    first = submit(users, gpus="2", nodelist="node05")
    second = submit(users, gres="gpu:tesla:2", nodelist="node05")
    third = submit(users, gpus_per_node="1", nodelist="node05")
    schedule_pass()
    for j in (first, second, third):
        j.refresh_from_db()
    assert first.gres_alloc == {"node05": [["gpu", "tesla", 2, [0, 1]]]}
    assert second.gres_alloc == {"node05": [["gpu", "tesla", 2, [2, 3]]]}
    assert (third.state, third.reason) == ("PENDING", "Resources")

    node = api("alice").get("/api/nodes/node05/").json()
    shown = render_record(node_record(node))
    assert "Gres=gpu:tesla:4\n" in shown and "GresUsed=gpu:tesla:4(IDX:0-3)\n" in shown
    assert node["cfg_tres"].endswith(",gres/gpu=4,gres/gpu:tesla=4")
    assert node["alloc_tres"].endswith(",gres/gpu=4,gres/gpu:tesla=4")

    job = api("alice").get(f"/api/jobs/{first.id}/").json()
    assert job["tres"].endswith(",gres/gpu=2,gres/gpu:tesla=2")
    assert "TresPerJob=gres/gpu:2" in render_record(job_record(job))
    second_json = api("alice").get(f"/api/jobs/{second.id}/").json()
    assert "TresPerNode=gres/gpu:tesla:2" in render_record(job_record(second_json))
    assert SQUEUE_FIELDS["b"][1](second_json) == "gres/gpu:tesla:2"

    # The launch carries the devices; the agent's environment names exactly them.
    launch = LaunchJob.from_wire(launch_payload(second)["job"])
    env = gres_environment(launch.to_wire())
    assert (env["CUDA_VISIBLE_DEVICES"], env["GPU_DEVICE_ORDINAL"], env["SLURM_JOB_GPUS"]) == ("2,3",) * 3
    assert env["SLURM_GPUS_PER_NODE"] == "tesla:2"
    assert gres_environment(launch_payload(first)["job"])["SLURM_GPUS"] == "2"

    # A new pass (as after a controller restart) reads what the running jobs hold.
    schedule_pass()
    third.refresh_from_db()
    assert third.state == "PENDING"
    first.refresh_from_db()
    end_job(first, JobState.COMPLETED, now=timezone.now(), why="test: the job ended")
    schedule_pass()
    third.refresh_from_db()
    assert third.state == "RUNNING" and third.gres_alloc == {"node05": [["gpu", "tesla", 1, [0]]]}

    # sacct: what the ended job asked for and was given, typed and untyped.
    answer = api("alice").get("/api/accounting/jobs/", {"job_id": str(first.id)}).json()
    [done] = answer["jobs"]
    assert done["req_tres"] == "billing=1,cpu=1,gres/gpu=2,mem=0M,node=1"
    assert {"gres/gpu=2", "gres/gpu:tesla=2"} <= set(done["alloc_tres"].split(","))
