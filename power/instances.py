"""Cloud accounting: the history of each node's cloud instances (Slurm's power_save.html,
"Cloud Accounting"), kept as :class:`power.models.CloudInstance` records.

:func:`instance_reported` is called with a node's new InstanceId / InstanceType / Extra
(a registration, ``scontrol update``) before they are stored on the node; a change of id
or type ends the node's current record and opens a new one, a change of Extra alone is
written on the current record. :func:`instances` lists them as slurmrestd's ``/instances``
does, for ``sacctmgr show instance`` and the REST API.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from cluster.models import ClusterConfig
from power.models import CloudInstance


def instance_reported(
    node_name: str, *, instance_id: str, instance_type: str, extra: str, now: datetime
) -> CloudInstance | None:
    """Record a node's instance as of ``now``; returns its current record (None if none)."""
    current = CloudInstance.objects.filter(node_name=node_name, time_end__isnull=True).order_by("-id").first()
    if current is not None and (current.instance_id, current.instance_type) == (instance_id, instance_type):
        if current.extra != extra:
            current.extra = extra
            current.save(update_fields=["extra"])
        return current
    if current is not None:
        current.time_end = now
        current.save(update_fields=["time_end"])
    if not instance_id and not instance_type:
        return None  # the node runs on no known instance any more
    return CloudInstance.objects.create(
        node_name=node_name, instance_id=instance_id, instance_type=instance_type, extra=extra, time_start=now
    )


def instances(
    *,
    nodes: Iterable[str] | None = None,
    instance_ids: Iterable[str] | None = None,
    instance_types: Iterable[str] | None = None,
    extras: Iterable[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[dict[str, Any]]:
    """The records active at some time in [start, end], as slurmrestd's ``/instances``
    lists them (``time_end`` 0 while current)."""
    rows = CloudInstance.objects.all()
    if nodes is not None:
        rows = rows.filter(node_name__in=list(nodes))
    if instance_ids is not None:
        rows = rows.filter(instance_id__in=list(instance_ids))
    if instance_types is not None:
        rows = rows.filter(instance_type__in=list(instance_types))
    if extras is not None:
        rows = rows.filter(extra__in=list(extras))
    if start is not None:
        rows = rows.exclude(time_end__lt=start)
    if end is not None:
        rows = rows.filter(time_start__lte=end)
    cluster = ClusterConfig.current().cluster_name or "cluster"
    return [
        {
            "cluster": cluster,
            "extra": r.extra,
            "instance_id": r.instance_id,
            "instance_type": r.instance_type,
            "node_name": r.node_name,
            "time": {
                "time_end": int(r.time_end.timestamp()) if r.time_end else 0,
                "time_start": int(r.time_start.timestamp()),
            },
        }
        for r in rows.order_by("node_name", "time_start", "id")
    ]


__all__ = ["instance_reported", "instances"]
