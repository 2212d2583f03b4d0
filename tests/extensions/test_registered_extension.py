"""A new extension is one module and one line of settings: the core loops over it in the
pass and in the cycles without knowing it (tests/extensions/odd_nodes.py)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from cluster import cycles, extensions
from cluster.models import Job
from cluster.services import agents
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from tests.extensions import odd_nodes

DEFAULT = ["reservations", "licenses", "limits", "arrays", "hres", "power"]
NODES = [f"node{i:02d}" for i in range(1, 33)]
WITH_ODD_NODES = [*DEFAULT, "tests.extensions.odd_nodes.OddNodesExtension"]


def register(names):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in names],
        running=[],
        completions=[],
    )


def submit(user):
    # A whole node each, among the four registered.
    spec = {"wrap": "true", "work_dir": "/tmp", "cpus_per_task": 4}
    return job_submit(user=user, spec=spec).job_ids[0]


def nodes_of_three_jobs(user) -> list[str]:
    """Where three whole-node jobs start in one pass."""
    register(NODES)
    ids = [submit(user) for _ in range(3)]
    schedule_pass()
    return sorted(Job.objects.filter(pk__in=ids, state="RUNNING").values_list("node_list", flat=True))


def test_the_extensions_plugin_takes_part_in_the_pass(demo, users, settings):
    settings.FSCHED_EXTENSIONS = WITH_ODD_NODES
    # Without it the first three nodes (node01-03) would be taken: only even ones are.
    assert nodes_of_three_jobs(users["alice"]) == ["node02", "node04", "node06"]


def test_without_the_line_in_settings_it_does_nothing(demo, users, settings):
    settings.FSCHED_EXTENSIONS = DEFAULT
    assert nodes_of_three_jobs(users["alice"]) == ["node01", "node02", "node03"]


def test_its_cycle_runs_with_the_cores(db, settings):
    settings.FSCHED_EXTENSIONS = WITH_ODD_NODES
    found = cycles.periodic()
    assert {"schedule", "backfill", "health", "usage", "power", "odd-nodes-count"} <= set(found)
    run, interval = found["odd-nodes-count"]
    before = len(odd_nodes.RUNS)
    assert run() == f"runs={before + 1}"
    assert interval == 60.0
    assert cycles.run_named("odd-nodes-count") == f"runs={before + 2}"


def test_the_order_is_the_settings_order(settings):
    settings.FSCHED_EXTENSIONS = ["power", "hres", "reservations"]
    assert [e.name for e in extensions.active()] == ["power", "hres", "reservations"]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("nosuch", "no extension 'nosuch' is registered"),
        ("tests.extensions.odd_nodes.Missing", "cannot import"),
        ("tests.extensions.odd_nodes.EvenNodesOnly", "is not a ClusterExtension"),
    ],
)
def test_a_wrong_entry_is_a_configuration_error_naming_it(settings, entry, words):
    settings.FSCHED_EXTENSIONS = [*DEFAULT, entry]
    with pytest.raises(ImproperlyConfigured, match=words):
        extensions.active()
