"""What the cluster core asks of power saving, as a cluster extension."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from cluster import clock
from cluster.core.scheduler import NodeView, Snapshot
from cluster.core.states import JobState, NodeFlag
from cluster.extensions import (
    Allocation,
    ClusterExtension,
    ConfigCheck,
    Cycle,
    PageSection,
    PassContext,
    Sample,
)
from cluster.models import Node
from cluster.services.errors import ServiceError
from cluster.services.inputs import INT_MAX, text
from power import metrics, services
from power.core.config import DEFAULT_POWER_SAVE_INTERVAL
from power.core.policy import power_node_order_key
from power.models import PowerRun

log = logging.getLogger(__name__)

# RESUME of a node in a power state is power saving's (it ends POWERING_DOWN).
_POWER_RESUME = NodeFlag.POWERING_DOWN | NodeFlag.POWERED_DOWN | NodeFlag.POWER_DRAIN


class PowerExtension(ClusterExtension):
    name = "power"

    def metrics(self) -> Sequence[Sample]:
        return metrics.samples()

    def check_config(self, conf: Any, *, path: Path, node_names: set[str]) -> ConfigCheck:
        # The power keys, with the programs checked on this host: refused before any change.
        power = services.check_config(conf)
        return ConfigCheck(power, tuple(power.warnings))

    def config_loaded(self, checked: ConfigCheck | None, *, actor: str, recover: bool, version: int) -> None:
        services.config_loaded(checked.value, version=version)

    def adjust_snapshot(self, ctx: PassContext, snap: Snapshot) -> Snapshot:
        # Powered-down nodes are usable (a job resumes them) when power saving can run.
        return services.scheduling_snapshot(snap)

    def node_order_key(self) -> Callable[[NodeView], tuple]:
        # Powered-down nodes come last.
        return power_node_order_key

    def launch_ready(self, job: Any) -> bool:
        """A CONFIGURING job is not launched while one of its nodes is powered down or
        powering up (another extension may end its wait first: hres/lua's asynchronous
        pre-run); this extension launches it when they are up."""
        if services.LAUNCHING.get() or job.state != JobState.CONFIGURING or not job.alloc:
            return True
        waking = NodeFlag.POWERED_DOWN | NodeFlag.POWERING_UP
        flags = Node.objects.filter(name__in=list(job.alloc)).values_list("flags", flat=True)
        return not any(f & waking for f in flags)

    def jobs_allocated(self, ctx: PassContext, allocation: Allocation) -> None:
        # A job given powered-down nodes waits CONFIGURING until they have all registered.
        allocation.waiting |= services.jobs_allocated(allocation.kept(), now=ctx.now)

    def check_node_fields(self, fields: Mapping[str, Any]) -> None:
        """SuspendTime: seconds within the column, INFINITE or NONE."""
        if "suspend_time" not in fields:
            return
        value = fields["suspend_time"]
        if isinstance(value, str):
            text(value, "suspend_time", max_length=32)
        elif not isinstance(value, int) or isinstance(value, bool):
            raise ServiceError(f"Invalid SuspendTime {value!r}", field="suspend_time")
        seconds = services.parse_node_suspend_time(value)
        if seconds is not None and not -1 <= seconds <= INT_MAX:
            raise ServiceError(f"Invalid SuspendTime {value!r}: out of range", field="suspend_time")

    def node_state_request(
        self, *, actor: Any, nodes: str, found: Mapping[str, Any], state: str, reason: str | None
    ) -> bool:
        # Power transitions have one service; a RESUME of a node powering down is one.
        if not (state.startswith("POWER_") or (
            state == "RESUME" and any(n.flags & _POWER_RESUME for n in found.values())
        )):  # fmt: skip
            return False
        services.power_request(actor=actor, nodes=nodes, op=state, reason=reason)
        return True

    def node_fields_update(self, nodes: Sequence[Any], fields: Mapping[str, Any], *, how: str) -> None:
        # InstanceId / InstanceType / Extra: the cloud accounting history (sacctmgr show instance).
        services.cloud_fields_update(nodes, fields, now=clock.now())
        if fields.get("suspend_time") is not None:
            # Per-node SuspendTime takes effect at once; before the save, so that a refused
            # value changes nothing.
            services.node_suspend_time_set(nodes, fields["suspend_time"], how=how)
        if how == "update":
            # AvailableFeatures / ActiveFeatures (NodeFeaturesPlugins rules).
            for node in nodes:
                services.node_features_update(
                    node, available=fields.get("features"), active=fields.get("active_features")
                )

    def node_registering(self, node: Any, *, boot_time: float | None, now: datetime) -> None:
        # Judged against the previous boot time: the end of a power up, or "Node
        # unexpectedly rebooted".
        services.node_registering(node, boot_time=boot_time, now=now)

    def node_reported(self, node: Any, info: Mapping[str, Any], *, now: datetime) -> Sequence[str]:
        return services.node_reported(node, info, now=now)

    def nodes_freed(self, freed: Mapping[str, Iterable[str]], *, now: datetime) -> None:
        services.nodes_freed(freed, now=now)

    def node_page_sections(self, name: str) -> Sequence[PageSection]:
        # Power up/down buttons (power/actions.py); the template shows them to staff only.
        return (PageSection("power/_node_actions.html", {"name": name}),)

    def cycles(self) -> Sequence[Cycle]:
        # Slurm's power-save thread acts every power_save_interval, and sooner (not more
        # often than power_save_min_interval) after node states change: two rows, so the
        # administrator edits power_save_interval with slurm.conf's value as its default.
        return (
            Cycle(
                "power_save",
                services.power_save_cycle,
                DEFAULT_POWER_SAVE_INTERVAL,
                slurm_parameter="SlurmctldParameters=power_save_interval",
            ),
            Cycle(
                "power",
                services.power_change_cycle,
                settings.FSCHED_POWER_INTERVAL,
                setting="FSCHED_POWER_INTERVAL",
            ),
        )

    def agent_messages(self) -> Mapping[str, Callable[..., None]]:
        return {"power_action_done": power_action_done}


def power_action_done(*, nodes: Sequence[str], msg: Mapping[str, Any]) -> bool:
    """A ``power_action_done`` from a connection holding ``nodes``: recorded only for a run
    that was sent to one of them."""
    run_id, node = int(msg["run_id"]), str(msg.get("node", ""))
    if node not in nodes or not PowerRun.objects.filter(pk=run_id, host=node).exists():
        log.warning(
            "power_action_done for run %s on %s from an agent serving %s: ignored", run_id, node, list(nodes)
        )
        return False
    services.agent_power_action_done(
        run_id=run_id,
        exit_code=int(msg.get("exit_code", 0)),
        error=str(msg.get("error") or ""),
        end_time=msg.get("end_time"),
    )
    return True
