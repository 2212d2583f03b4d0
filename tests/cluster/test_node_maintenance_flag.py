"""sinfo's ``$``/``maint`` (#13 point 8): the nodes of an active reservation with
Flags=MAINT carry MAINTENANCE while it lasts, and only then."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from cluster import cycles
from cluster.core.states import NodeFlag
from cluster.models import Node, Reservation
from cluster.services import reservations as svc


def states(*names: str) -> dict[str, tuple[str, str]]:
    return {n.name: (n.state_short, n.state) for n in Node.objects.filter(name__in=names)}


def test_a_maint_reservation_flags_its_nodes_while_active(demo, users, api):
    admin = users["admin"]
    svc.reservation_create(
        actor=admin,
        values={"name": "M", "start_time": "now", "duration": "60", "nodes": "node[01-02]",
                "users": "root", "flags": "MAINT"},
    )  # fmt: skip
    assert states("node01", "node02", "node03") == {
        "node01": ("maint", "UNKNOWN+MAINTENANCE"),
        "node02": ("maint", "UNKNOWN+MAINTENANCE"),
        "node03": ("unk", "UNKNOWN"),
    }
    listed = api("alice").get("/api/nodes/?name=node01").json()
    nodes = listed["results"] if isinstance(listed, dict) else listed
    assert [(n["state_short"], n["flags"]) for n in nodes] == [("maint", ["MAINTENANCE"])]
    # A plain reservation flags nothing; shrinking the MAINT one frees node02 at once.
    svc.reservation_create(
        actor=admin,
        values={"name": "P", "start_time": "now", "duration": "60", "nodes": "node03", "users": "bob"},
    )
    svc.reservation_update(actor=admin, name="M", values={"nodes": "node01"})
    flagged = {n.name for n in Node.objects.all() if n.flags & NodeFlag.MAINTENANCE}
    assert flagged == {"node01"}
    svc.reservation_delete(actor=admin, name="M")
    assert not any(n.flags & NodeFlag.MAINTENANCE for n in Node.objects.all())


def test_the_cycle_flags_a_future_one_when_it_begins_and_clears_it_when_it_ends(demo, users):
    svc.reservation_create(
        actor=users["admin"],
        values={"name": "M", "start_time": "now+1hour", "duration": "60", "nodes": "node04",
                "users": "root", "flags": "MAINT"},
    )  # fmt: skip
    assert not Node.objects.get(name="node04").flags & NodeFlag.MAINTENANCE
    assert "maintenance" in cycles.periodic()
    now = timezone.now()
    Reservation.objects.filter(name="M").update(start_time=now - timedelta(minutes=1))
    assert cycles.run_named("maintenance") == "changed=1"
    assert Node.objects.get(name="node04").state_short == "maint"
    Reservation.objects.filter(name="M").update(end_time=now - timedelta(seconds=1))
    assert cycles.run_named("maintenance") == "changed=1"
    assert Node.objects.get(name="node04").state_short == "unk"
