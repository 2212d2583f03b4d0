"""Advanced reservations: the pure plugin (access, windows, reserved nodes, reasons) and
the service with the scheduler pass (create/update/delete, audit, reserved HRES amounts)."""

from __future__ import annotations

import pytest

from cluster.core.reservations import AccessList, ReservationPlugin, ReservationView, parse_flags
from cluster.core.scheduler import JobView, NodeView, PartitionView, Snapshot, schedule
from cluster.core.states import Reason
from tests.hres.test_services import hres_conf  # noqa: F401 - the demo cluster with resources.yaml

NOW = 1_000_000.0


def _nodes(n: int) -> tuple[NodeView, ...]:
    return tuple(NodeView(i, f"n{i}", 4, 1000, 1, "IDLE", 0) for i in range(n))


def _job(job_id: int, user: str = "bob", **kw) -> JobView:
    kw.setdefault("time_limit", 10)
    return JobView(job_id=job_id, partition="p", user=user, submit_time=NOW - 10, **kw)


def _run(pending, reservations, nodes: int = 4):
    snap = Snapshot(
        now=NOW,
        nodes=_nodes(nodes),
        partitions={"p": PartitionView("p", tuple(range(nodes)))},
        pending=tuple(pending),
        running=(),
    )
    return schedule(snap, [ReservationPlugin(reservations)])


def _resv(**kw) -> ReservationView:
    base = {"name": "R", "start": NOW - 60, "end": NOW + 3600, "nodes": frozenset({"n0", "n1"})}
    base["users"] = AccessList.parse("alice")
    return ReservationView(**{**base, **kw})


def test_reservation_job_runs_only_on_its_nodes():
    r = _run([_job(1, "alice", reservation="R", min_nodes=2)], [_resv()])
    assert [s.node_indices for s in r.starts] == [(0, 1)]


def test_other_jobs_keep_off_reserved_nodes():
    r = _run([_job(1, min_nodes=2, num_tasks=8), _job(2, min_nodes=1)], [_resv()])
    assert [s.node_indices for s in r.starts] == [(2, 3)]
    assert {p.job_id: p.reason for p in r.pending} == {2: Reason.RESOURCES}


def test_a_future_reservation_withholds_nodes_only_from_jobs_that_would_reach_it():
    future = _resv(start=NOW + 300)  # in 5 minutes; the jobs ask for 10
    r = _run([_job(1, min_nodes=3)], [future])
    assert r.starts == () and r.pending[0].reason == Reason.RESOURCES
    r = _run([_job(1, min_nodes=3, time_limit=4)], [future])
    assert r.starts and r.starts[0].node_indices == (0, 1, 2)


def test_reason_reservation_until_active_and_for_outsiders():
    later = _resv(start=NOW + 600)
    r = _run([_job(1, "alice", reservation="R"), _job(2, "alice", reservation="nosuch")], [later])
    assert {p.job_id: p.reason for p in r.pending} == {1: Reason.RESERVATION, 2: Reason.RESERVATION}
    r = _run([_job(1, "carol", reservation="R")], [_resv()])
    assert r.pending[0].reason == Reason.RESERVATION


def test_maint_reason_for_required_and_crowded_out_jobs():
    maint = _resv(flags=frozenset({"MAINT"}))
    r = _run([_job(1, req_nodes=frozenset({"n0"})), _job(2, min_nodes=3)], [maint])
    assert {(p.reason, p.detail) for p in r.pending} == {
        (Reason.REQ_NODE_NOT_AVAIL, "Reserved for maintenance")
    }


def test_access_lists_and_flags():
    assert AccessList.parse("-bob").admits("alice") and not AccessList.parse("-bob").admits("bob")
    with pytest.raises(ValueError):
        AccessList.parse("alice,-bob")
    both = _resv(accounts=AccessList.parse("physics"))
    assert both.admits("alice", "physics") and not both.admits("alice", "chem")
    assert parse_flags("maint,ignore_jobs") == ("IGNORE_JOBS", "MAINT")
    with pytest.raises(ValueError):
        parse_flags("bogus")


def test_reservation_job_is_not_held_behind_a_blocked_partition():
    # Job 1 (higher priority, outsider) needs 3 nodes: only 2 are free to it, so it blocks
    # the partition; alice's reservation job still starts on the reserved nodes.
    r = _run([_job(1, min_nodes=3), _job(2, "alice", reservation="R")], [_resv()])
    assert [(s.job_id, s.node_indices) for s in r.starts] == [(2, (0,))]


# --------------------------------------------------------------------------- the service


@pytest.mark.django_db
def test_service_create_show_update_delete_and_audit(users, hres_conf):  # noqa: F811
    from cluster.models import Event
    from cluster.services import reservations as svc
    from cluster.services.errors import PermissionDenied, ServiceError

    with pytest.raises(PermissionDenied):
        svc.reservation_create(
            actor=users["alice"], values={"name": "R", "nodes": "node01", "users": "alice"}
        )
    made = svc.reservation_create(
        actor=users["admin"],
        values={"name": "R", "start_time": "now", "duration": "60", "nodes": "node[01-02]", "users": "alice"},
    )
    assert (made["state"], made["node_count"], made["duration"]) == ("ACTIVE", 2, 3600)
    with pytest.raises(ServiceError, match="Invalid node name"):
        svc.reservation_create(actor=users["admin"], values={"name": "S", "nodes": "nodeXX", "users": "a"})
    with pytest.raises(ServiceError, match="busy"):
        svc.reservation_create(actor=users["admin"], values={"name": "S", "nodes": "node02", "users": "bob"})
    changed = svc.reservation_update(actor=users["admin"], name="R", values={"users": "alice,bob"})
    assert changed["users"] == "alice,bob" and changed["duration"] == 3600
    svc.reservation_delete(actor=users["admin"], name="R")
    assert svc.reservation_list() == []
    kinds = list(
        Event.objects.filter(kind="config", reason__startswith="reservation").values_list("reason", flat=True)
    )
    assert sorted(kinds) == ["reservation create", "reservation delete", "reservation update"]
    update = Event.objects.get(reason="reservation update")
    assert update.detail["before"]["users"] == "alice" and update.detail["after"]["users"] == "alice,bob"


@pytest.mark.django_db
def test_reserved_hres_amount_goes_to_the_reservation_users_only(users, hres_conf):  # noqa: F811
    from cluster.models import Job
    from cluster.services import reservations as svc
    from cluster.services.errors import ServiceError
    from cluster.services.scheduling import schedule_pass
    from tests.hres.test_services import submit

    svc.reservation_create(
        actor=users["admin"], values={"name": "R", "licenses": "natural(low1):30", "users": "alice"}
    )
    with pytest.raises(ServiceError, match="Access denied"):
        submit(users["bob"], licenses="natural:71", nodelist="node01", reservation="R")
    bob = submit(users["bob"], licenses="natural:71", nodelist="node01")
    alice = submit(users["alice"], licenses="natural:71", nodelist="node02", reservation="R")
    schedule_pass()
    jobs = {j.id: j for j in Job.objects.all()}
    assert jobs[alice].state == "RUNNING"
    assert (jobs[bob].state, jobs[bob].reason) == ("PENDING", Reason.LICENSES)
    with pytest.raises(ServiceError, match="natural"):
        svc.reservation_create(
            actor=users["admin"], values={"name": "S", "licenses": "natural(low1):200", "users": "bob"}
        )


@pytest.mark.django_db
def test_a_mode2_reservation_job_runs_when_top_is_otherwise_full(users, hres_conf):  # noqa: F811
    # #13 point 5: flat(low2):4 holds 4 on low2 and on mid1 and top above it.
    from cluster.models import Job
    from cluster.services import reservations as svc
    from cluster.services.scheduling import schedule_pass
    from tests.hres.test_services import submit

    svc.reservation_create(
        actor=users["admin"], values={"name": "R", "licenses": "flat(low2):4", "users": "alice"}
    )
    others = [
        submit(users["bob"], licenses="flat:12", nodelist="node01"),  # low1
        submit(users["bob"], licenses="flat:8", nodelist="node17"),  # low3: top now has 20 used
        submit(users["bob"], licenses="flat:4", nodelist="node25"),  # low4: the reserved 4 of top
    ]
    schedule_pass()
    alice = submit(users["alice"], licenses="flat:4", nodelist="node09", reservation="R")
    schedule_pass()
    jobs = {j.id: j for j in Job.objects.all()}
    assert [jobs[j].state for j in others] == ["RUNNING", "RUNNING", "PENDING"]
    assert jobs[others[2]].reason == Reason.LICENSES
    assert jobs[alice].state == "RUNNING"
    assert jobs[alice].licenses_alloc == "flat(low2*4,mid1*4,top*4):4"


@pytest.mark.django_db
def test_a_future_reservation_is_checked_against_capacity(users, hres_conf):  # noqa: F811
    # #13 point 5: a reservation that starts later is refused when, during its window, the
    # layers cannot hold its amounts beside the reservations overlapping it.
    from cluster.models import Job, Reservation
    from cluster.services import reservations as svc
    from cluster.services.errors import ServiceError
    from cluster.services.scheduling import schedule_pass
    from tests.hres.test_services import submit

    admin = users["admin"]

    def create(name: str, start: str, minutes: int, licenses: str) -> None:
        values = {"name": name, "start_time": start, "duration": str(minutes), "licenses": licenses}
        svc.reservation_create(actor=admin, values={**values, "users": "alice"})

    with pytest.raises(ServiceError, match=r"natural\(low1\):101 needs 101 on layer low1, 100 available at "):
        create("big", "now+2hours", 60, "natural(low1):101")
    create("early", "now", 60, "natural(low1):60")
    create("later", "now+2hours", 60, "natural(low1):60,natural(low2):70")  # after "early" ends
    with pytest.raises(ServiceError, match=r"needs 60 on layer low1, 40 available at "):
        create("overlap", "now+30minutes", 60, "natural(low1):60")
    # Checked from now on, a present reservation meets the future ones within its window.
    with pytest.raises(ServiceError, match=r"natural\(low2\):40 needs 40 on layer low2, 30 available at "):
        create("long", "now", 180, "natural(low2):40")
    # Moving a reservation into another's window is checked as creating it there.
    with pytest.raises(ServiceError, match="40 available"):
        svc.reservation_update(actor=admin, name="later", values={"start_time": "now+30minutes"})
    assert sorted(Reservation.objects.values_list("name", flat=True)) == ["early", "later"]
    # A running job holds its amount until its expected end, not beyond.
    svc.reservation_delete(actor=admin, name="early")
    job = submit(users["bob"], licenses="natural:50", nodelist="node01", time="30")
    schedule_pass()
    assert Job.objects.get(pk=job).state == "RUNNING"
    with pytest.raises(ServiceError, match=r"needs 60 on layer low1, 50 available$"):
        create("now", "now", 60, "natural(low1):60")
    with pytest.raises(ServiceError, match=r"needs 60 on layer low1, 50 available at "):
        create("during_the_job", "now+10minutes", 60, "natural(low1):60")
    create("after_the_job", "now+1hour", 30, "natural(low1):60")


# --------------------------------------------------------------------------- REST and CLI


@pytest.mark.django_db
def test_rest_endpoint_is_staff_only_and_cli_layout(api, users, hres_conf):  # noqa: F811
    from cli.scontrol import render_record, reservation_body, reservation_record

    words = "ReservationName=R StartTime=now Duration=1:00:00 Nodes=node[01-02] Users=alice Flags=maint"
    body = reservation_body([tuple(w.split("=", 1)) for w in words.split()])
    assert api("alice").post("/api/reservations/", body, format="json").status_code == 403
    made = api("admin").post("/api/reservations/", body, format="json")
    assert made.status_code == 201, made.json()
    listed = api("alice").get("/api/reservations/", {"name": "R"}).json()["reservations"]
    text = render_record(reservation_record(listed[0]))
    lines = text.splitlines()
    assert lines[0].startswith("ReservationName=R StartTime=") and lines[0].endswith("Duration=01:00:00")
    assert lines[1] == (
        "   Nodes=node[01-02] NodeCnt=2 CoreCnt=8 Features=(null) PartitionName=(null) Flags=MAINT"
    )
    assert lines[3].startswith("   Users=alice Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE")
    assert api("admin").patch("/api/reservations/R/", {"nodes": "node03"}, format="json").status_code == 200
    assert api("alice").delete("/api/reservations/R/").status_code == 403
    assert api("admin").delete("/api/reservations/R/").status_code == 204
    assert api("admin").get("/api/reservations/R/").status_code == 404
