"""A simulation writes no audit entries (#18 simulator speed): django-auditlog records what
people change on nodes and partitions; a simulated cluster has no people, and each node
save it audited cost a read and an insert."""

from __future__ import annotations

from pathlib import Path

from auditlog.models import LogEntry

from cluster.models import Node
from simulator.engine import Engine
from simulator.records import SimJob

CONF = Path(__file__).parent / "conf"


def test_a_simulation_leaves_no_audit_entries_and_auditing_is_back_after(transactional_db, tmp_path):
    jobs = [SimJob(job_id=1, submit=0, run_time=30, user="alice", ntasks=1)]
    before = set(LogEntry.objects.values_list("id", flat=True))  # the cycles' rows, made at setup
    Engine(conf_dir=CONF, jobs=jobs, out_dir=tmp_path / "out", workload_name="audit").run()
    assert Node.objects.filter(base_state="IDLE").exists()  # the nodes registered and ran it
    during = LogEntry.objects.exclude(id__in=before)
    assert list(during.values_list("content_type__model", "object_repr")[:5]) == []
    # Outside the simulation, a node's change is audited again.
    node = Node.objects.get(name="n1")
    node.reason = "checked"
    node.save()
    assert LogEntry.objects.get_for_object(node).exists()
