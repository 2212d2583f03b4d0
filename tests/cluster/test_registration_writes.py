"""An agent's registration writes its nodes together (cluster/services/agents.py): as
many statements for a hundred nodes as for ten (1,000 nodes took 5,000 statements and
5 s, node by node with an audit entry each), and each node as the node-by-node save
left it: its fields, its state and its history (Event)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Event, Node
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.nodes import NOT_RESPONDING_REASON

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def many(settings, tmp_path):
    settings.CONF_DIR = tmp_path
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=reg\nSlurmctldHost=localhost\nReturnToService=1\n"
        "NodeName=sim[001-200] CPUs=64 RealMemory=256000 State=UNKNOWN\n"
        "PartitionName=batch Nodes=sim[001-200] Default=YES MaxTime=INFINITE State=UP\n"
    )
    config_load(path=tmp_path / "slurm.conf")


def infos(first: int, last: int) -> list[dict]:
    return [
        {"name": f"sim{i:03d}", "cpus": 64, "real_memory": 256000, "boot_time": 1000.0 + i}
        for i in range(first, last + 1)
    ]


def statements(first: int, last: int) -> int:
    """The statements of registering sim[first-last], but the configuration's revision
    reads (one a node: power saving's settings, ClusterConfig.current's check)."""
    with CaptureQueriesContext(connection) as q:
        agents.agent_register(agent_id="a:1", nodes=infos(first, last), running=[], completions=[], now=NOW)
    return sum('"cluster_clusterconfig" WHERE' not in s["sql"] for s in q.captured_queries)


def test_a_hundred_nodes_take_as_many_statements_as_ten(many):
    assert statements(1, 10) == statements(11, 110)
    # Registered again (no state changes, no events): the same again.
    assert statements(1, 10) == statements(11, 110)


def test_each_node_is_written_as_it_was_registered(many):
    rng = random.Random(18)
    starts = [
        (NodeBase.UNKNOWN, NodeFlag.NONE, ""),
        (NodeBase.IDLE, NodeFlag.NOT_RESPONDING, ""),
        (NodeBase.DOWN, NodeFlag.NOT_RESPONDING, NOT_RESPONDING_REASON),
        (NodeBase.DOWN, NodeFlag.NONE, "broken fan"),
        (NodeBase.IDLE, NodeFlag.DRAIN, "maintenance"),
    ]
    chosen = {}
    for node in Node.objects.all():
        chosen[node.name] = rng.choice(starts)
        node.base_state, node.flags, node.reason = (
            chosen[node.name][0],
            int(chosen[node.name][1]),
            chosen[node.name][2],
        )
        node.save()
    Event.objects.all().delete()
    result = agents.agent_register(agent_id="a:1", nodes=infos(1, 200), running=[], completions=[], now=NOW)
    assert len(result.accepted) == 200
    expected_state = {
        (NodeBase.UNKNOWN, NodeFlag.NONE, ""): ("IDLE", ""),
        (NodeBase.IDLE, NodeFlag.NOT_RESPONDING, ""): ("IDLE", ""),
        # ReturnToService=1: a node DOWN only for not responding returns.
        (NodeBase.DOWN, NodeFlag.NOT_RESPONDING, NOT_RESPONDING_REASON): ("IDLE", ""),
        (NodeBase.DOWN, NodeFlag.NONE, "broken fan"): ("DOWN", "broken fan"),
        (NodeBase.IDLE, NodeFlag.DRAIN, "maintenance"): ("IDLE+DRAIN", "maintenance"),
    }
    events = {e.node: e for e in Event.objects.filter(kind=Event.Kind.NODE)}
    for node in Node.objects.all():
        before = chosen[node.name]
        state, reason = expected_state[before]
        number = int(node.name[3:])
        assert (node.state, node.reason) == (state, reason), node.name
        assert (node.agent_id, node.reported_cpus, node.reported_memory) == ("a:1", 64, 256000)
        assert node.boot_time == datetime.fromtimestamp(1000.0 + number, UTC)
        assert node.last_contact == NOW and node.slurmd_start_time == NOW
        # An event where what shows changed, none elsewhere.
        old = Node(base_state=before[0], flags=int(before[1]), reason=before[2]).state
        if old == node.state:
            assert node.name not in events
        else:
            assert (events[node.name].old_state, events[node.name].new_state) == (old, node.state)
            assert events[node.name].time == NOW


def counted(call, **kwargs) -> int:
    with CaptureQueriesContext(connection) as q:
        call(**kwargs)
    return sum('"cluster_clusterconfig" WHERE' not in s["sql"] for s in q.captured_queries)


def test_an_agents_end_and_its_nodes_recovery_take_as_many_statements_for_a_hundred_nodes(many):
    few, lots = [n["name"] for n in infos(1, 10)], [n["name"] for n in infos(11, 110)]
    agents.agent_register(agent_id="a:1", nodes=infos(1, 10), running=[], completions=[], now=NOW)
    agents.agent_register(agent_id="a:2", nodes=infos(11, 110), running=[], completions=[], now=NOW)
    Event.objects.all().delete()
    ended = [
        counted(agents.agent_disconnected, nodes=names, agent_id=agent, registered_at=NOW, now=NOW)
        for names, agent in ((few, "a:1"), (lots, "a:2"))
    ]
    assert ended[0] == ended[1]
    ended_nodes = Node.objects.filter(name__in=few + lots)
    assert {(n.state, n.agent_id) for n in ended_nodes} == {("IDLE+NOT_RESPONDING", "")}
    assert Event.objects.filter(new_state="IDLE+NOT_RESPONDING").count() == 110
    # Registered again and silent since: the health pass marked them; their pings bring them back.
    agents.agent_register(agent_id="a:1", nodes=infos(1, 110), running=[], completions=[], now=NOW)
    Node.objects.update(flags=int(NodeFlag.NOT_RESPONDING))
    Event.objects.all().delete()
    pinged = [counted(agents.agent_ping, nodes=names, now=NOW) for names in (few, lots)]
    assert pinged[0] == pinged[1]
    assert {(n.state, n.last_contact) for n in Node.objects.filter(name__in=few + lots)} == {("IDLE", NOW)}
    assert Event.objects.filter(old_state="IDLE+NOT_RESPONDING", new_state="IDLE").count() == 110


def test_completions_restated_at_registration_are_recorded_together(many, users):
    """An agent back after an outage restates its unacknowledged completions: recorded as
    one batch (as many statements for a hundred as for ten; one by one, each re-read every
    holding job's allocation and the 10,000-node bench's controller stalled in one
    registration), each job ended as its completion says and acknowledged."""
    from cluster.models import Job
    from cluster.services.jobs import job_submit
    from cluster.services.scheduling import schedule_pass

    agents.agent_register(agent_id="a:1", nodes=infos(1, 200), running=[], completions=[], now=NOW)

    def run_and_restate(count: int, exit_code: int) -> tuple[int, list[int]]:
        spec = {"wrap": "true", "work_dir": "/tmp", "exclusive": True}
        ids = [job_submit(user=users["alice"], spec=spec).job_ids[0] for _ in range(count)]
        schedule_pass()
        jobs = list(Job.objects.filter(pk__in=ids))
        assert {j.state for j in jobs} == {"RUNNING"}
        done = [
            {"job_id": j.id, "node": j.batch_host, "exit_code": exit_code, "signal": 0, "end_time": 1.0e9}
            for j in jobs
        ]
        with CaptureQueriesContext(connection) as q:
            result = agents.agent_register(agent_id="a:1", nodes=infos(1, 200), running=[], completions=done)
        assert sorted(result.acked) == sorted(ids)
        assert set(Job.objects.filter(pk__in=ids).values_list("state", flat=True)) == {
            "COMPLETED" if exit_code == 0 else "FAILED"
        }
        return sum('"cluster_clusterconfig" WHERE' not in s["sql"] for s in q.captured_queries), ids

    ten, _ = run_and_restate(10, 0)
    hundred, _ = run_and_restate(100, 3)
    assert hundred == ten
