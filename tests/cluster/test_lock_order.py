"""Writers take the rows they share in one order (docs/locking.md): a reconfigure and the
power cycle, each waiting for the other's rows, never deadlock on PostgreSQL.

A server's start-up is a reconfigure; in distributed mode it meets the Celery passes. With
the power cycle locking its state row before the nodes and the reconfigure the nodes
before that row, PostgreSQL killed one of them, and a server that was killed outright
never came back up (the crash test). Here a third connection holds the first node either
takes, so that both are caught mid-way, then lets go: both must finish.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.db.models import F
from django.utils import timezone

from cluster.core.states import NodeFlag
from cluster.models import Node
from cluster.services.configuration import config_load
from power.services import power_pass
from tests.cluster.pg_locks import in_thread, until, waiting_on_locks
from tests.conftest import DEMO_CONF

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL"),
    pytest.mark.django_db(transaction=True),
]


def test_a_reconfigure_and_the_power_cycle_waiting_for_each_other_both_finish(demo):
    first = Node.objects.order_by("name").first()
    # The power cycle locks only the nodes it can decide about (power/cycle_input.py): the
    # first node, powering down for longer than SuspendTimeout, is one, and the first the
    # reconfigure locks (one powering down within its timeout leaves the cycle quiet).
    Node.objects.filter(pk=first.pk).update(
        flags=F("flags").bitor(NodeFlag.POWERING_DOWN), power_entered=timezone.now() - timedelta(hours=1)
    )
    holder = connections.create_connection("default")
    errors: list[BaseException] = []
    try:
        with holder.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("SELECT id FROM cluster_node WHERE id = %s FOR UPDATE", [first.pk])
        reconfigure = in_thread(lambda: config_load(path=DEMO_CONF / "slurm.conf"), errors)
        until(lambda: waiting_on_locks() >= 1, "the reconfigure to wait for the held node")
        cycle = in_thread(lambda: power_pass(force=True), errors)
        until(lambda: waiting_on_locks() >= 2, "the power cycle to wait too")
        time.sleep(0.2)  # whatever else either would lock first, it has locked by now
    finally:
        with holder.cursor() as cursor:
            cursor.execute("ROLLBACK")
        holder.close()
    reconfigure.join(30)
    cycle.join(30)
    assert not reconfigure.is_alive() and not cycle.is_alive()
    assert not errors, errors
