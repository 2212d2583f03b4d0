"""The load check: every 30 seconds, each node's latest indices against its partition's
thresholds (docs/load-thresholds.md).  The decisions are the pure core's
(load.core.decisions); this applies them.

Applied so far: drain and undrain.  A node drained by the check carries a reason that
starts with ``Load:`` (given by ``slurm``, as slurmctld signs its own reasons); a drain
with any other reason is an administrator's, which the check neither takes over nor
lifts.  Stopping and continuing jobs (``LoadStop*``) are decided by the core but not yet
applied: jobs have no STOPPED state yet.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from cluster import publish
from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node
from cluster.services import rows
from cluster.services.state import set_node_state
from load.core.decisions import CHECK_INTERVAL, check_node
from load.models import NodeLoad
from load.selectors import thresholds_in_force

LOAD_REASON = "Load: "
SIGNER = "slurm"
# Indices older than this say nothing about the node now (its agent is silent).
STALE_AFTER = timedelta(seconds=CHECK_INTERVAL)
_UNJUDGED = NodeFlag.NOT_RESPONDING | NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN | NodeFlag.POWERING_UP


def load_drained(node: Node) -> bool:
    return bool(node.flags & NodeFlag.DRAIN) and node.reason.startswith(LOAD_REASON)


def load_check(*, now: datetime | None = None) -> str:
    """One check of every node with thresholds and fresh indices; what it did, in words."""
    now = now or timezone.now()
    latest = {row.node: row for row in NodeLoad.objects.filter(at__gte=now - STALE_AFTER)}
    limits = {name: t for name, t in thresholds_in_force(list(latest)).items() if t}
    if not limits:
        return "no node with thresholds and indices"
    done: list[str] = []
    with transaction.atomic():
        # Nodes are locked by name, the writers' order (docs/locking.md).
        for node in Node.objects.select_for_update().filter(name__in=limits).order_by("name"):
            if node.base_state == NodeBase.DOWN or node.flags & _UNJUDGED:
                continue
            row = latest[node.name]
            drained_by_load = load_drained(node)
            decisions = check_node(
                thresholds=limits[node.name],
                indices=row.indices(),
                run_queue=row.run_queue,
                jobs=(),
                load_drained=drained_by_load,
                admin_drained=bool(node.flags & NodeFlag.DRAIN) and not drained_by_load,
                now=now.timestamp(),
            )
            figures = {**row.indices(), "run_queue": row.run_queue}
            for decision in decisions:
                if decision.action == "drain":
                    set_node_state(
                        node, add=NodeFlag.DRAIN, reason=decision.reason, user=SIGNER, now=now, detail=figures
                    )
                elif decision.action == "undrain":
                    set_node_state(node, remove=NodeFlag.DRAIN, reason="", now=now, detail=figures)
                else:
                    continue
                rows.update_rows([node], ["flags", "reason", "reason_user", "reason_time"])
                done.append(f"{decision.action} {node.name}")
    if done:
        publish.console_changed("nodes")
    return ", ".join(done) or "nothing to do"
