"""The HRES plugin of a pass with its reads kept (pass_snapshot.kept_value, #18 simulator
speed) against one computed afresh: an oracle.

Random sequences of the real services (submissions with HRES requests, passes,
completions, ``scontrol update HRESName=`` of counts and DisableHRES, reservations with
layer amounts created, moved and deleted, node updates, a dynamic node created and
deleted, a reconfigure with or without one resource, resources.yaml written alone, a
rolled-back
update) inside ``keep()``.  After every step the plugin a pass builds, at a moment that
moves so that reservations begin and end, must equal the one built after everything kept
is forgotten (``pass_snapshot.forget``, the module's memos dropped): its layers with the
reserved amounts, the holding jobs' charges, the modes; and the pass's decisions must be
the same.  Without one of the kept values' tables (Reservation, LayerUpdate,
ResourcesFile, Node) some step leaves them different.
"""

from __future__ import annotations

import contextlib
import random
from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from cluster.models import Job, Node
from cluster.services import pass_snapshot
from cluster.services import reservations as reservation_services
from cluster.services.configuration import config_load
from cluster.services.core_extensions import holding_license_rows
from cluster.services.dynamic_nodes import node_create, node_delete
from cluster.services.errors import ServiceError
from cluster.services.nodes import node_update
from cluster.services.scheduling import decide, schedule_pass
from hres import services
from hres.models import ResourcesFile
from tests.hres.test_services import NODES, finish, hres_conf, submit  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def _afresh(monkeypatch, rows, now):
    """The plugin with nothing kept: every read made again, every memo empty."""
    monkeypatch.setattr(services, "_state_kept", None)
    monkeypatch.setattr(services, "_reserved_memo", None)
    services._charges_of.cache_clear()
    pass_snapshot.forget()
    return services.pass_plugin(rows, now)


def _assert_same(monkeypatch, now):
    rows = holding_license_rows()
    kept = services.pass_plugin(rows, now)
    kept_reads = services.modes(), services.reservation_items(now)
    kept_result = decide(now)[3]
    fresh = _afresh(monkeypatch, rows, now)
    assert kept.base == fresh.base
    assert kept.charges == fresh.charges
    assert kept.modes == fresh.modes
    # What requests and reservations are parsed with, and the reservations active.
    assert kept_reads == (services.modes(), services.reservation_items(now))
    assert kept_result == decide(now)[3]


def _steps(rng, users, conf, clock):
    admin = users["admin"]

    def submit_job():
        lic = rng.choice(["flat:2", "natural:30", "power:100", "flat:1,natural:10", ""])
        user = rng.choice([users["alice"], users["bob"]])
        spec = {"nodes": rng.choice([1, 2]), "time": rng.choice(["5", "30"])}
        if lic:
            spec["licenses"] = lic
        submit(user, **spec)

    def complete():
        ids = list(Job.objects.filter(state="RUNNING").values_list("id", flat=True))
        if ids:
            finish(rng.choice(ids))

    def count():
        resource, layer = rng.choice([("flat", "low1"), ("natural", "low2"), ("flat", "top")])
        services.hres_update(
            actor=admin, hres_name=resource, layer_name=layer, count=rng.choice([0, 4, 12, 40])
        )

    def disable():
        services.hres_update(actor=admin, hres_name="natural", disable_hres=rng.choice(["true", "false"]))

    def reserve():
        name = rng.choice(["R1", "R2"])
        start = clock[0] + timedelta(minutes=rng.choice([-10, 0, 20]))
        values = {
            "licenses": rng.choice(["natural(low1):30", "flat(low2):4", "natural(top):10"]),
            "users": "alice",
            "start_time": f"{timezone.localtime(start):%Y-%m-%dT%H:%M:%S}",
            "duration": str(rng.choice([15, 60])),
        }
        exists = reservation_services.Reservation.objects.filter(name=name).exists()
        if exists and rng.random() < 0.4:
            reservation_services.reservation_delete(actor=admin, name=name)
        elif exists:
            reservation_services.reservation_update(actor=admin, name=name, values=values)
        else:
            reservation_services.reservation_create(actor=admin, values={"name": name, **values})

    def node():
        node_update(actor=admin, nodes=rng.choice(NODES), weight=rng.choice([1, 5]))

    def dynamic():
        # A node without HRES= changes nothing but the node list the layers are over.
        if Node.objects.filter(name="node33").exists():
            node_delete(actor=admin, names="node33")
        else:
            node_create(actor=admin, params={"NodeName": "node33", "State": "future"})

    spec = (conf / "resources.yaml").read_text()
    natural = spec[spec.index("- resource: natural") : spec.index("- resource: power")]

    def reconfigure():
        # The same file, or one without a resource (its requests and reservations no
        # longer parse): the modes change with resources.yaml alone.
        (conf / "resources.yaml").write_text(spec if rng.random() < 0.5 else spec.replace(natural, ""))
        config_load(path=conf / "slurm.conf")

    def raw_resources():
        # resources.yaml written alone (the services also drop the runtime updates, so only
        # a write of that one table tells whether a kept value follows it).
        text = spec if rng.random() < 0.5 else spec.replace(natural, "")
        ResourcesFile.objects.filter(pk=1).update(text=text, version=F("version") + 1)

    def rolled_back():
        with transaction.atomic():
            services.hres_update(actor=admin, hres_name="flat", layer_name="low3", count=1)
            transaction.set_rollback(True)

    def tick():
        clock[0] += timedelta(minutes=rng.choice([0, 5, 20]))

    return [
        (submit_job, 5),
        (lambda: schedule_pass(now=clock[0]), 4),
        (complete, 2),
        (count, 2),
        (disable, 1),
        (reserve, 3),
        (node, 1),
        (dynamic, 1),
        (reconfigure, 1),
        (raw_resources, 1),
        (rolled_back, 1),
        (tick, 3),
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kept_plugin_equals_one_built_afresh(hres_conf, users, monkeypatch, seed):  # noqa: F811
    rng = random.Random(seed)
    clock = [timezone.now()]
    funcs, weights = zip(*_steps(rng, users, hres_conf, clock), strict=True)
    with pass_snapshot.keep():
        _assert_same(monkeypatch, clock[0])
        for _ in range(60):
            step = rng.choices(funcs, weights)[0]
            with contextlib.suppress(ServiceError):  # a refusal: still compared
                step()
            # The pass's moment, up to an hour on: reservations begin and end.
            _assert_same(monkeypatch, clock[0] + timedelta(minutes=rng.choice([0, 0, 30, 60])))
    assert Job.objects.exclude(licenses_alloc="").exists()  # the sequence did charge layers
