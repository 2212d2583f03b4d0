"""The holding jobs' licences and HRES usage of a pass, kept between passes (#18
simulator speed), against a fresh computation: an oracle.

The holding jobs' licence rows (a kept value of the job table), the cluster licences
and HRES charges parsed from them (kept while the rows are the same list), and the layers
with usage that a pass's HRES plugin and the simulator's log build from the charges
(``hres.core.plugin.UsageMemo``: kept while the state is the same object and the holding
jobs' charges are equal), the configured layers' reads (a kept value of resources.yaml's
row and the kept runtime updates), and the layers' node lists as ``scontrol show license`` and the
report rollup show them (folded once per set of nodes).  Random sequences of the real services (those of
test_kept_pass_plugin: submissions with HRES and plain requests, passes, completions,
layer counts, reservations, reconfigures, rollbacks) inside ``keep()``; after every step
each must equal a fresh computation.  Without the job table, or with the usage kept for
the state alone, some step leaves them different.
"""

from __future__ import annotations

import contextlib
import random
from datetime import timedelta

import pytest
from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet
from django.utils import timezone

from cluster.core.licenses import plain_alloc
from cluster.models import Job
from cluster.services import core_extensions, pass_snapshot
from cluster.services.errors import ServiceError
from cluster.services.scheduling import build_snapshot
from hres import services
from hres.core import layers
from hres.core.plugin import HresPlugin
from hres.models import LayerUpdate, ResourcesFile
from tests.hres.test_kept_pass_plugin import _steps
from tests.hres.test_services import hres_conf  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def _assert_same(now, seen):
    rows = core_extensions.holding_license_rows()
    fresh = core_extensions._read_holding_license_rows()
    assert rows == fresh
    assert core_extensions.held_licenses(rows) == {j: plain_alloc(a) for j, _l, a, _r in fresh if a}
    charges = services._read_charges(fresh)
    assert services.holding_charges() == charges
    state = services.with_active_reservations(services.current_state())
    assert services.state_with_usage() == state.with_usage(c for cs in charges.values() for c in cs)
    # The configured layers (the never-runs check of a submission), on their kept reads.
    updates = LayerUpdate.objects.filter(keep=True).order_by("id")
    layers = services.build_state(services._config_for(ResourcesFile.current()), services._read_node_names())
    configured = services._replay(layers, updates)
    assert services.configured_state() == configured
    plugin = services.pass_plugin(rows, now)
    if plugin is not None:
        snap = build_snapshot(now)[0]
        plugin.begin_pass(snap)
        alone = HresPlugin(plugin.base, plugin.charges)
        alone.begin_pass(snap)
        assert plugin.state == alone.state
        assert plugin._index == alone._index
        seen["used"] += any(any(r.used) for r in plugin.state.resources)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kept_usage_equals_one_built_afresh(hres_conf, users, seed):  # noqa: F811
    rng = random.Random(seed)
    clock = [timezone.now()]

    def kept_update():
        # A dynamic node's layers as its creation keeps them (written by no service here):
        # the configured layers follow the table.
        node = rng.choice(["node01", "node02"])
        layer = rng.choice(["low1", "low2"])
        LayerUpdate.objects.create(
            time=timezone.now(), resource="flat", layer=layer, changes={"nodes": f"-{node}"}, keep=True
        )

    steps = [*_steps(rng, users, hres_conf, clock), (kept_update, 1)]
    funcs, weights = zip(*steps, strict=True)
    seen = {"used": 0}
    with pass_snapshot.keep():
        for _ in range(60):
            step = rng.choices(funcs, weights)[0]
            with contextlib.suppress(ServiceError):  # a refusal: still compared
                step()
            _assert_same(clock[0] + timedelta(minutes=rng.choice([0, 0, 30])), seen)
            # Asked again with nothing written between: what is kept is used.
            _assert_same(clock[0], seen)
    assert Job.objects.exclude(licenses_alloc="").exists()  # the sequence did charge layers
    assert seen["used"]


def test_a_layers_nodes_folded_once_are_folded_as_before():
    # license_view folds each layer's nodes through a cache (hres.core.layers._folded).
    rng = random.Random(5)
    names = [f"c{i:03d}" for i in range(1, 200)] + ["gpu1", "gpu7", "login"]
    for _ in range(300):
        nodes = frozenset(rng.sample(names, rng.choice([0, 1, 2, 5, 40, 150])))
        want = str(NodeSet.fromlist(sorted(nodes), resolver=RESOLVER_NOGROUP)) if nodes else ""
        assert layers._folded(nodes) == want
        assert layers._folded(frozenset(nodes)) == want  # an equal set, from the cache
