"""The launch message a start sends (``state.launch_payload``): the job's wire form is
built once and not walked again to wrap it in the message (a pass of thousands of starts
builds one per start, each with the job's environment; session 19)."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.state import launch_payload
from slurmwords import wire
from slurmwords.agent_messages import Launch, LaunchJob


def _job() -> Job:
    return Job(
        id=7,
        user="alice",
        name="work",
        partition="batch",
        script="#!/bin/sh\ntrue\n",
        work_dir="/tmp",
        std_out="/tmp/out",
        environment={f"VAR{k}": str(k) for k in range(100)},
        batch_host="n1",
        node_list="n[1-2]",
        alloc={"n1": [2, 100], "n2": [2, 100]},
        time_limit=30,
    )


def test_the_environment_is_walked_once(monkeypatch: pytest.MonkeyPatch):
    job = _job()
    walks = []
    real = wire._plain

    def counted(value):
        if value == job.environment:
            walks.append(value)
        return real(value)

    monkeypatch.setattr(wire, "_plain", counted)
    payload = launch_payload(job, "cred", {})
    assert payload["job"]["environment"] == job.environment
    assert len(walks) == 1  # was 2: the job's wire form walked again inside the message


def test_the_message_is_the_launch_message_of_the_job():
    payload = launch_payload(_job(), "cred", {})
    launch = LaunchJob.from_wire(payload["job"])
    assert payload == Launch.of(launch).to_wire()
    assert Launch.from_wire(payload).job["environment"]["VAR99"] == "99"
    assert payload["job"]["num_nodes"] == 2 and payload["job"]["cpus_on_node"] == 2
