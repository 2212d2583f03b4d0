"""The agent protocol's messages (slurmwords/agent_messages.py): every type survives JSON,
the registry is the protocol, and a malformed message names its type and field."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from agent.daemon import HOST_ARCH, HOST_OS, NodeSpec
from agent.spool import Completion as SpooledCompletion
from slurmwords import agent_messages as am
from slurmwords.version import SLURM_VERSION

NONCE = "ab" * 32
END = {
    "job_id": 7,
    "node": "node01",
    "exit_code": 3,
    "signal": 0,
    "end_time": 1700000000.25,
    "seq": 4,
    "run": 1,
}
LAUNCH_JOB = am.LaunchJob(
    job_id=7, run=1, name="myjob", user="alice", script="#!/bin/sh\necho hi\n", argv=["--flag"],
    work_dir="/home/alice", std_out="slurm-%j.out", std_err=None, std_in=None,
    environment={"PATH": "/usr/bin", "LANG": "C"}, batch_host="node01", node_list="node[01-02]",
    num_nodes=2, cpus_on_node=4, partition="debug", account="physics", qos="normal",
    array_job_id=None, array_task_id=None, time_limit=60,
)  # fmt: skip

# One message of every type, as the agent or the controller sends it, optional fields filled.
SAMPLES: list[am.Message] = [
    am.Hello(agent_id="host:0123456789ab", nonce=NONCE, nodes=["node01", "node02"]),
    am.Challenge(nonce=NONCE, proof="cd" * 32),
    am.Auth(proof="ef" * 32),
    am.Register(
        agent_id="host:0123456789ab",
        nodes=[
            am.NodeInfo(name="node01", cpus=4, real_memory=2048, boot_time=1699999000.5),
            am.NodeInfo(
                name="dyn1",
                cpus=8,
                real_memory=4096,
                boot_time=1699999000.5,
                features="a,b",
                instance_id="i-1",
                instance_type="m5",
                extra="{}",
                conf="CPUs=8 Feature=a,b",
            ),
        ],
        running=[am.RunningJob(job_id=5, node="node01", pid=4242, run=0)],
        completions=[am.Completion(**END)],
    ),
    am.Started(job_id=7, node="node01", pid=4242, time=1699999999.5, run=1),
    am.StartedBatch(
        started=[
            am.JobStart(job_id=7, node="node01", pid=4242, time=1699999999.5, run=1),
            am.JobStart(job_id=8, node="node02", pid=4243),  # an agent that names no run
        ]
    ),
    am.LaunchFailed(job_id=7, node="node01", error="user x does not exist", time=1699999999.5, run=1),
    am.Completed(**END),
    am.CompletedBatch(completions=[am.Completion(**END), am.Completion(**{**END, "job_id": 8})]),
    am.Ping(time=1699999999.5, nodes=["node01"], load={"node01": am.NodeLoad(cpu_load=0.25, free_mem=1024)}),
    am.Drain(nodes=["node01", "node02"], reason="spool unusable: No space left on device"),
    am.PowerActionDone(run_id=3, node="node01", exit_code=-9, end_time=1699999999.5, error=""),
    am.RebootDone(node="node01", exit_code=127, end_time=1699999999.5, error="RebootProgram isn't defined"),
    am.PrologEpilog(job_id=7, node="node01", run=0, what="prolog_failed", error="exited with status 1"),
    am.RunEpilog(job_id=7, node="node02", run=0, exit_code=0, signal=9, job={"user": "ann", "num_nodes": 2}),
    am.RunProlog(job_id=7, node="node02", run=0, job={"user": "ann", "num_nodes": 2}),
    am.Registered(
        nodes=["node01"], rejected={"node02": "node is served by another agent"}, kill=[5], ping_interval=5
    ),
    am.Launch.of(LAUNCH_JOB),
    am.Signal(job_id=7, signal="USR1"),
    am.Notify(job_id=7, message="checkpoint soon"),
    am.Cancel(job_id=7, kill_wait=30),
    am.Ack(job_ids=[7, 8]),
    am.PowerAction(
        run_id=3,
        node="node01",
        action="off",
        argv=["/sbin/poweroff", "node01"],
        env={"SLURM_NODE_NAME": "node01"},
    ),
    am.Reboot(node="node01"),
    am.StepLaunch(
        job_id=7, step_id=0, node="node02", node_index=1, tasks=[2, 3], cpu_ids=[0, 1], ntasks=4,
        node_list="node[01-02]", num_nodes=2, tasks_per_node="2(x2)", argv=["hostname"],
        environment={"PATH": "/usr/bin"}, work_dir="/home/alice", job={"user": "alice", "cpus_on_node": 4},
        io_host="10.0.0.5", io_port=40000, io_key="ab" * 32, cpus_per_task=1, std_out="out-%t",
    ),
    am.StepSignal(job_id=7, step_id=0, node="node02", signal="KILL"),
    am.StepDone(job_id=7, step_id=0, node="node02", exit_code=3, signal=0, time=1699999999.5, error=""),
    am.StepUsage(time=1699999999.5, nodes=["node01"], steps=[am.StepUsageRecord(
        job_id=7, step="batch", node="node01",
        tasks=[am.TaskUsage(task=0, pids=[41, 42], rss_kb=2048, max_rss_kb=4096, vmem_kb=9000,
                            max_vmem_kb=9100, pages=1, max_pages=2, cpu_secs=3.25, read_bytes=None,
                            max_read_bytes=None, write_bytes=10, max_write_bytes=10)],
    )]),
]


def through_json(wire: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(wire))


def test_the_registry_is_the_protocol_both_ways() -> None:
    # Listed by hand, not read from the code: a type added to (or lost from) the protocol
    # must be added here on purpose, with its sample below.
    assert set(am.AGENT_MESSAGES) == {
        "hello", "auth", "register", "started", "started_batch", "launch_failed", "completed",
        "completed_batch", "ping", "drain", "power_action_done", "reboot_done", "prolog_epilog",
        "step_done", "step_usage",
    }  # fmt: skip
    assert set(am.CONTROLLER_MESSAGES) == {
        "challenge", "registered", "launch", "signal", "notify", "cancel", "ack", "power_action", "reboot",
        "run_epilog", "run_prolog", "step_launch", "step_signal",
    }  # fmt: skip
    assert am.REGISTRY == {**am.AGENT_MESSAGES, **am.CONTROLLER_MESSAGES}
    assert not set(am.AGENT_MESSAGES) & set(am.CONTROLLER_MESSAGES)
    for kind, cls in am.REGISTRY.items():
        assert kind == cls.TYPE and dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_every_registered_type_has_a_sample() -> None:
    assert sorted(m.TYPE for m in SAMPLES) == sorted(am.REGISTRY)


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda m: m.TYPE)
def test_every_type_round_trips_through_json(msg: am.Message) -> None:
    wire = msg.to_wire()
    assert wire["type"] == msg.TYPE
    back = am.decode(through_json(wire))
    assert type(back) is type(msg)
    assert back == msg
    assert back.to_wire() == wire
    # Each direction's registry takes its own messages only.
    mine = am.AGENT_MESSAGES if msg.TYPE in am.AGENT_MESSAGES else am.CONTROLLER_MESSAGES
    theirs = am.CONTROLLER_MESSAGES if mine is am.AGENT_MESSAGES else am.AGENT_MESSAGES
    assert am.decode(through_json(wire), mine) == msg
    with pytest.raises(am.MessageError) as refused:
        am.decode(through_json(wire), theirs)
    assert (refused.value.message_type, refused.value.field) == (msg.TYPE, "type")


def test_the_launch_object_round_trips_and_keeps_its_nulls() -> None:
    wire = am.Launch.of(LAUNCH_JOB).to_wire()["job"]
    assert (wire["std_err"], wire["std_in"], wire["array_job_id"], wire["array_task_id"]) == (None,) * 4
    assert am.LaunchJob.from_wire(through_json(wire)) == LAUNCH_JOB
    with pytest.raises(am.MessageError) as missing:
        am.LaunchJob.from_wire({k: v for k, v in wire.items() if k != "std_err"})
    assert missing.value.field == "std_err"  # nullable, but always sent


def test_the_wire_is_what_the_agent_sent_before() -> None:
    """The dicts the agent built by hand before these classes, key for key."""
    spooled = SpooledCompletion(**END)
    assert am.Completed(**spooled.to_dict()).to_wire() == {"type": "completed", **END}
    # Containment's fields (#16 point 4) travel only when known: an earlier controller sees
    # the same keys as before; a known value goes as it is.
    measured = SpooledCompletion(**END, out_of_memory=True, max_rss_kb=2048, total_cpu_secs=1.5)
    assert am.Completed(**measured.to_dict()).to_wire() == {
        "type": "completed", **END, "out_of_memory": True, "max_rss_kb": 2048, "total_cpu_secs": 1.5,
    }  # fmt: skip
    # The host's Arch/OS/Version came later; an earlier controller ignores keys it does not know.
    host = {"arch": HOST_ARCH, "os": HOST_OS, "version": SLURM_VERSION}
    spec = NodeSpec("node01", 4, 2048, features="a,b", conf="CPUs=4")
    assert spec.info(5.0).to_wire() == {
        "name": "node01", "cpus": 4, "real_memory": 2048, "boot_time": 5.0,
        "features": "a,b", "conf": "CPUs=4", **host,
    }  # fmt: skip
    assert NodeSpec("node02", 1, 10).info(5.0).to_wire() == {
        "name": "node02", "cpus": 1, "real_memory": 10, "boot_time": 5.0, **host,
    }  # fmt: skip
    assert am.Cancel(job_id=3, kill_wait=0).to_wire() == {"type": "cancel", "job_id": 3, "kill_wait": 0}
    assert am.Signal(job_id=3, signal="STOP").to_wire() == {"type": "signal", "job_id": 3, "signal": "STOP"}


def test_an_optional_field_left_out_stays_out() -> None:
    # A completion without ``run`` is of the job's current run: it must not come back as run 0.
    wire = {"type": "completed", "job_id": 1, "node": "node01", "exit_code": 0, "signal": 0, "end_time": 2.0}
    msg = am.decode(wire)
    assert isinstance(msg, am.Completed) and (msg.run, msg.seq) == (None, None)
    assert msg.to_wire() == wire
    started = am.decode({"type": "started", "job_id": 1, "node": "node01", "pid": 9, "time": None})
    assert started.to_wire() == {"type": "started", "job_id": 1, "node": "node01", "pid": 9}
    assert am.decode({"type": "hello", "agent_id": "a:1", "nonce": NONCE}) == am.Hello("a:1", NONCE, [])


def test_keys_a_message_does_not_know_are_ignored() -> None:
    # A newer peer may add a field; this one still takes the message.
    msg = am.decode({"type": "ack", "job_ids": [1], "since": "a later release"})
    assert msg == am.Ack(job_ids=[1])


MALFORMED = [
    # (message, its type as named, the field named)
    ({"type": "launch_failed", "job_id": "not a number", "node": "node01", "error": "x"}, "launch_failed",
     "job_id"),
    ({"type": "started", "job_id": 1, "pid": 2}, "started", "node"),
    ({"type": "started", "job_id": True, "node": "n", "pid": 2}, "started", "job_id"),
    ({"type": "completed_batch", "completions": [END, {**END, "exit_code": "3"}]}, "completed_batch",
     "completions[1].exit_code"),
    ({"type": "completed_batch", "completions": None}, "completed_batch", "completions"),
    ({"type": "started_batch", "started": [{"job_id": 1, "node": "n", "pid": 2}, {"job_id": 2, "pid": 3}]},
     "started_batch", "started[1].node"),
    ({"type": "register", "agent_id": "a:1", "nodes": [{"name": "n1"}], "running": [], "completions": []},
     "register", "nodes[0].cpus"),
    ({"type": "register", "agent_id": "a:1", "nodes": ["n1"], "running": [], "completions": []},
     "register", "nodes[0]"),
    ({"type": "ping", "time": 1.0, "nodes": ["n1"], "load": {"n1": {"cpu_load": "high", "free_mem": 1}}},
     "ping", "load['n1'].cpu_load"),
    ({"type": "drain", "nodes": "node01", "reason": "x"}, "drain", "nodes"),
    ({"type": "power_action", "run_id": 1, "node": "node01"}, "power_action", "argv"),
    ({"type": "power_action", "run_id": 1, "node": "node01", "argv": ["/x", 2]}, "power_action", "argv[1]"),
    ({"type": "power_action_done", "run_id": 1, "node": "n", "exit_code": 0, "end_time": 1.0},
     "power_action_done", "error"),
    ({"type": "registered", "nodes": [], "rejected": {"n": 1}, "kill": [], "ping_interval": 5}, "registered",
     "rejected['n']"),
    ({"type": "launch", "job": ["no", "object"]}, "launch", "job"),
    ({"type": "cancel", "job_id": 1, "kill_wait": "soon"}, "cancel", "kill_wait"),
    ({"type": "prolog_epilog", "job_id": 1, "node": "n", "run": 0, "what": "prolog_started"}, "prolog_epilog",
     "what"),
    ({"type": "hello", "agent_id": None, "nonce": NONCE}, "hello", "agent_id"),
    ({"type": "no_such_thing"}, "no_such_thing", "type"),
    ({"type": 5}, "", "type"),
    ({"type": ["ack"]}, "", "type"),
    ({"job_id": 1}, "", "type"),
]  # fmt: skip


@pytest.mark.parametrize(("wire", "kind", "field"), MALFORMED, ids=[f for _, _, f in MALFORMED])
def test_a_malformed_message_names_its_type_and_field(wire: dict[str, Any], kind: str, field: str) -> None:
    with pytest.raises(am.MessageError) as bad:
        am.decode(wire)
    assert (bad.value.message_type, bad.value.field) == (kind, field)
    assert field in str(bad.value) and kind in str(bad.value)


def test_what_is_not_an_object_is_refused_whole() -> None:
    for wire in (["type", "ack"], "ack", None, 3):
        with pytest.raises(am.MessageError, match="must be an object"):
            am.decode(wire)
    with pytest.raises(am.MessageError, match="type must be 'ack'"):
        am.Ack.from_wire({"type": "cancel", "job_ids": []})


def test_the_error_says_what_was_wrong() -> None:
    with pytest.raises(am.MessageError) as bad:
        am.decode({"type": "signal", "job_id": 3, "signal": None})
    assert str(bad.value) == "signal message: signal must be a string, not null"
    with pytest.raises(am.MessageError) as bad:
        am.decode({"type": "ack", "job_ids": [1, 2.5]})
    assert str(bad.value) == "ack message: job_ids[1] must be an integer, not a number (2.5)"
