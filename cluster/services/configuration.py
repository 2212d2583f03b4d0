"""Reading slurm.conf into the database: at start and on ``scontrol reconfigure``."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from auditlog.context import auditlog_disabled
from django.conf import settings
from django.db import transaction

from cluster import clock, extensions, publish
from cluster.core.hostlists import fold
from cluster.core.slurmconf import ConfigError, SlurmConfig, load_slurm_conf
from cluster.models import ClusterConfig, Event, Node, Partition
from cluster.services import rows
from cluster.services.errors import ServiceError
from cluster.services.state import configured_state

log = logging.getLogger(__name__)


def conf_path() -> Path:
    return Path(settings.CONF_DIR) / "slurm.conf"


def config_load(*, path: Path | None = None, actor: str = "", recover: bool = False) -> SlurmConfig:
    """Parse the whole configuration, then apply it in one transaction.

    Nothing changes unless every file parses: a ConfigError becomes a ServiceError whose
    message lists every problem as ``file:line: reason``.  ``recover`` is slurmctld's
    ``-R`` at start: nodes of slurm.conf keep their runtime HRES layers too.
    """
    path = path or conf_path()
    active = extensions.active()
    try:
        conf, checked = config_check(path)
    except ConfigError as exc:
        raise ServiceError(f"Reconfigure refused, the configuration in force is kept:\n{exc}") from exc
    except OSError as exc:
        raise ServiceError(f"{path}: {exc.strerror}") from exc
    for warning in (*conf.warnings, *(w for c in checked if c is not None for w in c.warnings)):
        log.warning("%s", warning)
    with transaction.atomic():
        _apply(conf, actor=actor)
        version = ClusterConfig.current().version
        for ext, check in zip(active, checked, strict=True):
            ext.config_loaded(check, actor=actor, recover=recover, version=version)
    return conf


def config_check(path: Path) -> tuple[SlurmConfig, list[Any]]:
    """Parse slurm.conf at ``path`` and let every extension check its part; nothing is
    applied.  Raises ConfigError (every problem as ``file:line``) or OSError."""
    conf = load_slurm_conf(path)
    dynamic = Node.objects.filter(in_conf=False).values_list("name", flat=True)
    node_names = {n.name for n in conf.nodes} | set(dynamic)
    # Each extension reads and checks its part (resources.yaml, the power programs on
    # this host) before anything changes: one reconfigure path, refused as a whole.
    return conf, [ext.check_config(conf, path=path, node_names=node_names) for ext in extensions.active()]


@transaction.atomic
def _apply(conf: SlurmConfig, *, actor: str) -> None:
    now = clock.now()
    cfg = ClusterConfig.for_update()
    before = _snapshot(cfg)
    cfg.cluster_name = conf.cluster_name
    cfg.options = {
        **conf.options,
        "SlurmdTimeout": conf.slurmd_timeout,
        "MaxJobCount": conf.max_job_count,
        "KillWait": conf.kill_wait,
        "ReturnToService": conf.return_to_service,
        "SlurmctldHost": conf.slurmctld_host,
    }
    cfg.licenses = dict(conf.licenses)
    cfg.files = list(conf.files)
    cfg.loaded_at = now
    cfg.version += 1
    cfg.save()

    # Locked, by name, before any is written: a registration or a pass that changed a
    # node meanwhile is not overwritten, and the order is every writer's (docs/locking.md).
    existing = {n.name: n for n in Node.objects.select_for_update().order_by("name")}
    batched = auditlog_disabled.get()
    added: list[Node] = []
    events: list[dict[str, Any]] = []
    for nc in conf.nodes:
        node = existing.pop(nc.name, None)
        is_new = node is None
        if is_new:
            node = Node(name=nc.name)
        node.cpus = nc.cpus
        node.real_memory = nc.real_memory
        node.tmp_disk = nc.tmp_disk
        node.sockets = nc.sockets
        node.cores_per_socket = nc.cores_per_socket
        node.threads_per_core = nc.threads_per_core
        node.weight = nc.weight
        node.features = ",".join(nc.features)
        node.gres = nc.gres
        node.suspend_time = nc.suspend_time
        node.in_conf = True
        if is_new or node.conf_state != nc.state:
            configured_state(node, nc.state, now=now)
        node.conf_state = nc.state
        if not node.active_features:
            node.active_features = node.features
        if is_new and batched:
            added.append(node)
        else:
            node.save()
        if is_new:
            events.append(
                {
                    "time": now,
                    "kind": Event.Kind.NODE,
                    "node": node.name,
                    "new_state": node.state,
                    "reason": "configured",
                    "user": actor,
                }
            )
    # New nodes and their events a statement per batch, in the order one by one would have
    # written them (so the same ids): at 10,000 nodes the saves were most of a start's
    # time.  Nodes are audited one by one through their save, so batched only when no
    # audit entry is written (the simulator's run).
    rows.insert_values(Node, [_node_row(n) for n in added])
    rows.insert_values(Event, events)
    # Nodes gone from slurm.conf (and not dynamic) disappear once nothing runs on them.
    for node in existing.values():
        if node.in_conf and node.alloc_cpus == 0:
            node.delete()

    keep = set()
    for position, pc in enumerate(conf.partitions):
        Partition.objects.update_or_create(
            name=pc.name,
            defaults={
                "nodes": pc.nodes_expr,
                "is_default": pc.default,
                "state": pc.state,
                "max_time": pc.max_time,
                "default_time": pc.default_time,
                "max_nodes": pc.max_nodes,
                "min_nodes": pc.min_nodes,
                "priority_tier": pc.priority_tier,
                "priority_job_factor": pc.priority_job_factor,
                "extra": dict(pc.extra),
                "position": position,
            },
        )
        keep.add(pc.name)
    Partition.objects.exclude(name__in=keep).delete()
    Event.objects.create(
        time=now,
        kind=Event.Kind.CONFIG,
        old_state=f"v{before['version']}" if before["version"] else "",
        new_state=f"v{cfg.version}",
        reason="reconfigure",
        user=actor,
        detail={
            "files": list(conf.files),
            "digests": dict(conf.digests),
            **_changes(before, _snapshot(cfg)),
        },
    )
    publish.console_changed("nodes", "partitions", "config")


def _node_row(node: Node) -> dict[str, Any]:
    return {f.attname: getattr(node, f.attname) for f in Node._meta.concrete_fields if not f.primary_key}


# Options whose values the audit record leaves out (its detail is shown in the console).
_SECRET_OPTION = re.compile(r"pass|secret|token|key$", re.IGNORECASE)


def _snapshot(cfg: ClusterConfig) -> dict[str, Any]:
    return {
        "version": cfg.version,
        "cluster_name": cfg.cluster_name,
        "options": dict(cfg.options),
        "licenses": dict(cfg.licenses),
        "nodes": set(Node.objects.filter(in_conf=True).values_list("name", flat=True)),
        "partitions": set(Partition.objects.values_list("name", flat=True)),
    }


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a reconfigure changed, for its audit record: options as ``{key: [old, new]}``
    (None where absent; secret-looking keys only say that they changed), licenses the same,
    nodes and partitions added and removed as hostlists and names."""

    def diff(old: dict[str, Any], new: dict[str, Any], *, hide: bool) -> dict[str, list[Any]]:
        out = {}
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                secret = hide and _SECRET_OPTION.search(key)
                out[key] = ["(hidden)", "(hidden)"] if secret else [old.get(key), new.get(key)]
        return out

    changes: dict[str, Any] = {
        "options": diff(before["options"], after["options"], hide=True),
        "licenses": diff(before["licenses"], after["licenses"], hide=False),
        "nodes_added": fold(after["nodes"] - before["nodes"]),
        "nodes_removed": fold(before["nodes"] - after["nodes"]),
        "partitions_added": sorted(after["partitions"] - before["partitions"]),
        "partitions_removed": sorted(before["partitions"] - after["partitions"]),
    }
    if before["cluster_name"] != after["cluster_name"]:
        changes["cluster_name"] = [before["cluster_name"], after["cluster_name"]]
    return changes
