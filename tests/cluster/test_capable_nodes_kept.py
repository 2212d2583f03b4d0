"""A submission's nodes that could hold it (cluster.services.jobs._capable): read from the
partition once per request shape and configuration, not scanned again at every submission
(at 10,000 nodes, two scans of a 5,000-node partition were a quarter of the simulator's
first minute).  The demo's partition debug is node[01-08], 4 CPUs and 2000 MB each."""

from __future__ import annotations

import pytest

from cluster.core import feasibility
from cluster.models import ClusterConfig, Job
from cluster.services import jobs
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit

pytestmark = pytest.mark.django_db

WRAP = {"wrap": "true", "work_dir": "/tmp", "partition": "debug"}


@pytest.fixture
def scans(monkeypatch):
    """Every scan of a partition's nodes, as (CPUs a task, memory a node, excluded)."""
    seen: list[tuple[int, int, frozenset[str]]] = []
    real = feasibility.capable_nodes

    def counted(request, members):
        seen.append((request.cpus_per_task, request.mem_per_node or 0, request.exc_nodes))
        return real(request, members)

    monkeypatch.setattr(feasibility, "capable_nodes", counted)
    jobs._capable_seen.clear()
    return seen


def test_one_scan_per_request_shape_and_configuration(demo, users, scans):
    alice = users["alice"]
    for _ in range(3):
        job_submit(user=alice, spec={**WRAP, "mem": "1000M"})
    assert scans == [(1, 1000, frozenset())]
    job_submit(user=alice, spec={**WRAP, "mem": "1000M", "cpus_per_task": 2})
    assert len(scans) == 2
    # Excluded nodes are the job's own: scanned every time.
    job_submit(user=alice, spec={**WRAP, "mem": "1000M", "exclude": "node01"})
    job_submit(user=alice, spec={**WRAP, "mem": "1000M", "exclude": "node01"})
    assert len(scans) == 4
    # A new configuration revision: scanned again.
    ClusterConfig.current().save()
    job_submit(user=alice, spec={**WRAP, "mem": "1000M"})
    assert len(scans) == 5
    assert Job.objects.count() == 7


def test_the_kept_answer_is_the_scanned_one(demo, users, scans):
    alice = users["alice"]
    job_submit(user=alice, spec={**WRAP, "nodes": "8", "mem": "2000M"})
    # Kept or not, a shape no node of debug can hold is refused with the same figures.
    for _ in range(2):
        with pytest.raises(ServiceError) as err:
            job_submit(user=alice, spec={**WRAP, "nodes": "2", "mem": "2001M"})
        assert err.value.explanation == "no node of partition debug has 2001 MB"
    assert len(scans) == 2
