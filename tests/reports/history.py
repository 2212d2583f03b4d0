"""A fixed history for the report tests, small enough to add up by hand.

Two nodes of 4 CPUs and 1000 MB (8 CPUs).  On 2026-01-05 (UTC):

* job 1: alice in physics, 2 CPUs on n1, eligible 09:50, ran 10:00-11:30;
* job 2: bob in chem, 2 CPUs on n1, eligible 10:00, ran 10:30-12:30;
* job 3: carol in theory (a sub-account of physics), 1 CPU on n2, ran 10:00-10:45;
* n2 went DOWN at 11:00 and stayed down.

Over 10:00-12:00, in CPU-minutes:
  allocated = 2x90 (job 1) + 2x90 (job 2, 10:30-12:00) + 45 (job 3) = 405
  down      = 4 CPUs x 60 min (n2, 11:00-12:00)                      = 240
  planned   = 2 CPUs x 30 min (job 2 eligible, waiting 10:00-10:30)  = 60
  idle      = 8 x 120 - 405 - 240 - 60                               = 255
  reported  = 8 x 120                                                = 960
and by association: alice/physics 180, bob/chem 180, carol/theory 45; physics with its
sub-account 225, root 405.
"""

from __future__ import annotations

from datetime import UTC, datetime

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Event, Job, Node
from limits.models import Account, Association, Cluster, LimitsUser


def at(hour: int, minute: int = 0, day: int = 5) -> datetime:
    return datetime(2026, 1, day, hour, minute, tzinfo=UTC)


def make_history() -> None:
    for name in ("n1", "n2"):
        Node.objects.create(
            name=name, cpus=4, real_memory=1000, base_state=NodeBase.IDLE, flags=NodeFlag.NONE
        )
    # n2 is DOWN now; its history says since when.
    Node.objects.filter(name="n2").update(base_state=NodeBase.DOWN)
    Event.objects.create(time=at(11), kind=Event.Kind.NODE, node="n2", old_state="IDLE", new_state="DOWN")
    jobs = [
        (1, "alice", "physics", 2, "n1", at(9, 50), at(10), at(11, 30)),
        (2, "bob", "chem", 2, "n1", at(10), at(10, 30), at(12, 30)),
        (3, "carol", "theory", 1, "n2", at(10), at(10), at(10, 45)),
    ]
    for jid, user, account, cpus, node, submit, start, end in jobs:
        Job.objects.create(
            id=jid, user=user, account=account, partition="debug", num_tasks=cpus, node_list=node,
            submit_time=submit, eligible_time=submit, start_time=start, end_time=end, state="COMPLETED",
        )  # fmt: skip
        for t, old, new in ((start, "PENDING", "RUNNING"), (end, "RUNNING", "COMPLETED")):
            Event.objects.create(time=t, kind=Event.Kind.JOB, job_id=jid, old_state=old, new_state=new)
    # The limits' migrations may have made the cluster and root already.
    cluster, _ = Cluster.objects.get_or_create(name="cluster")
    accounts = {
        name: Account.objects.get_or_create(name=name)[0] for name in ("root", "physics", "theory", "chem")
    }
    for name, parent in (("root", None), ("physics", "root"), ("theory", "physics"), ("chem", "root")):
        Association.objects.get_or_create(
            cluster=cluster, account=accounts[name], user=None, partition="",
            defaults={"parent": accounts[parent] if parent else None},
        )  # fmt: skip
    for user, account in (("alice", "physics"), ("bob", "chem"), ("carol", "theory")):
        Association.objects.create(
            cluster=cluster,
            account=accounts[account],
            user=LimitsUser.objects.create(name=user),
            parent=accounts[account],
        )
