"""What the cluster core asks of the hierarchical resources, as a cluster extension."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ClusterShell.NodeSet import NodeSet
from django.utils import timezone

from cluster import clock
from cluster.core.feasibility import NODE_CONFIG_UNAVAILABLE, Refused
from cluster.core.scheduler import PassResult, SchedulerPlugin
from cluster.core.slurmconf import ConfigError
from cluster.extensions import (
    LICENSE_MODES,
    LICENSE_ROWS,
    Allocation,
    ClusterExtension,
    ConfigCheck,
    Cycle,
    OverviewPanel,
    PassContext,
    Sample,
)
from cluster.services.core_extensions import holding_license_rows
from cluster.services.errors import ServiceError
from hres import (
    lua_async,
    lua_callbacks,
    lua_maintenance,
    lua_plugins,
    lua_process,
    metrics,
    preemption,
    services,
)
from hres.core.feasibility import never_serves
from hres.core.layers import build_state
from hres.core.reservation_window import ReservationConflict, check_window
from slurmwords.licenses import Mode, parse_license_request, parse_reservation_licenses

log = logging.getLogger(__name__)

_PLUGIN = "hres.core.plugin"


class HresExtension(ClusterExtension):
    name = "hres"

    def check_config(self, conf: Any, *, path: Path, node_names: set[str]) -> ConfigCheck:
        # resources.yaml (ResourcesFile=, or the default next to slurm.conf) is checked
        # against the new nodes and licenses before anything changes: one reconfigure path.
        loaded = services.read_resources(
            path.parent, conf.resources_file, cluster_nodes=node_names, cluster_licenses=conf.licenses
        )
        resources = loaded.config.resources if loaded.config is not None else ()
        mode3 = [r.name for r in resources if r.mode == Mode.MODE_3]
        parts = [
            (p.name, p.priority_tier, preemption.option(p.extra, "PreemptMode")) for p in conf.partitions
        ]
        # A preemption set up so that it can never reclaim them: warned in the controller's
        # log at start and at every reconfigure, as the other configuration warnings.
        # The plugins' scripts are loaded now: one that cannot be refuses the configuration.
        scripts = lua_plugins.prepare(loaded.config, slurm_user=conf.options.get("SlurmUser"))
        disabled: tuple[str, ...] = ()
        if loaded.config is not None and scripts.scripts:
            # hres/lua: the contexts in force end before the new ones begin, which see the
            # layers as configured, nothing used; a fatal error refuses the configuration.
            lua_callbacks.destroy_contexts(conf.options)
            state = build_state(loaded.config, sorted(node_names))
            try:
                disabled = lua_callbacks.create_contexts(scripts, loaded.config, state, conf.options)
            except ConfigError:
                lua_callbacks.recreate_contexts(conf.options)  # the configuration kept
                raise
        warnings = preemption.config_warnings(conf.options, parts, mode3)
        return ConfigCheck((loaded, scripts, disabled), (*warnings, *scripts.warnings))

    def config_loaded(self, checked: ConfigCheck | None, *, actor: str, recover: bool, version: int) -> None:
        loaded, scripts, disabled = checked.value
        services.resources_store(loaded, actor=actor, recover=recover)
        # This process's scripts are those of the version just stored: it does not load
        # them again (hres.lua_process), the other processes do.
        lua_plugins.install(scripts, lua_process.version_in_force())
        if scripts.scripts:
            now = clock.now()
            lua_callbacks.disable_resources(disabled, services.current_state(), now=now)
            # The pending jobs' plugin arguments, validated again by the scripts in force.
            lua_callbacks.validate_pending(services.modes(), now=now)
            if actor == "slurmctld":  # the controller's start, not a reconfigure
                lua_async.recover_lost(now=now)
            lua_callbacks.destroy_at_exit()

    def submit_fields(self, common: Mapping[str, Any], *, count: int, now: datetime, cfg: Any) -> Mapping:
        if common.get("licenses") and lua_plugins.resources_with_plugins():
            lua_callbacks.check_request(common["licenses"], services.modes())
        return {}

    def job_modify(self, changes: Mapping[str, Any], *, job: Any, user: Any, cfg: Any) -> None:
        # A licenses update is validated by the plugins as a submission is.
        if changes.get("licenses") and lua_plugins.resources_with_plugins():
            lua_callbacks.check_request(str(changes["licenses"]), services.modes())

    def license_modes(self) -> Mapping[str, Mode]:
        return services.modes()

    def license_variables(self) -> Mapping[str, Mapping[str, int]]:
        return services.variables()

    def never_runs(
        self, common: Mapping[str, Any], *, nodes: Sequence[str], count: int, unnamed: int
    ) -> Refused | None:
        """A request no layer set could ever serve, as configured or as updated at runtime:
        refused as Slurm refuses a job its test at submission finds no nodes for."""
        modes = services.modes()
        if not modes:
            return None
        try:
            items = parse_license_request(common["licenses"], hres=modes).hres(modes)
        except ValueError:
            return None  # refused already, or left to the pass
        if not items:
            return None
        required = tuple(NodeSet(common["req_nodes"])) if common["req_nodes"] else ()
        states = (services.current_state(), services.configured_state())
        why = never_serves(states, items, count, nodes, required=required, spare=unnamed)
        return Refused(NODE_CONFIG_UNAVAILABLE, why, "licenses") if why else None

    def reservation_check(self, row: Any, *, now: datetime) -> None:
        """The layers must hold a reservation's amounts throughout its window, whether it
        is active now or starts later (#13 point 5)."""
        if not row.licenses or row.end_time <= now:
            return
        modes = services.modes()
        items = [it for it in parse_reservation_licenses(row.licenses, hres=modes) if it.name in modes]
        if not items:
            return
        try:
            check_window(
                services.current_state(),
                row.name,
                items,
                start=row.start_time,
                end=row.end_time,
                now=now,
                others=services.reservations_overlapping(row.start_time, row.end_time, exclude=row.name),
                holdings=services.holdings(),
            )
        except ReservationConflict as exc:
            message = str(exc)
            if exc.when > now:
                message += f" at {timezone.localtime(exc.when):%Y-%m-%dT%H:%M:%S}"
            raise ServiceError(message, field="licenses") from None
        except ValueError as exc:
            raise ServiceError(str(exc), field="licenses") from None

    def prepare_pass(self, ctx: PassContext) -> None:
        rows = ctx.shared.get(LICENSE_ROWS)
        if rows is None:
            rows = ctx.shared[LICENSE_ROWS] = holding_license_rows()
        plugin = services.pass_plugin(rows, ctx.now)
        ctx.shared[_PLUGIN] = plugin
        ctx.shared[LICENSE_MODES] = plugin.modes if plugin is not None else {}

    def pass_plugins(self, ctx: PassContext) -> Sequence[SchedulerPlugin]:
        # Last of the plugins: it picks the nodes, so it must see the final candidates.
        plugin = ctx.shared[_PLUGIN]
        return (plugin,) if plugin is not None else ()

    def jobs_allocated(self, ctx: PassContext, allocation: Allocation) -> None:
        plugin = ctx.shared[_PLUGIN]
        if plugin is None:
            return
        # A job whose layers could not hold it on its final nodes waits for the next pass.
        allocation.dropped.update(plugin.conflicts)
        for job_id in allocation.kept():
            charges = [str(c) for c in plugin.started.get(job_id, ())]
            # LicensesAlloc lists the hierarchical charges before the plain licenses.
            allocation.licenses.setdefault(job_id, [])[:0] = charges
        if lua_plugins.resources_with_plugins():
            # A job whose asynchronous pre-run of an earlier run has not ended is not
            # scheduled again until it ends.
            allocation.dropped.update(lua_async.busy(allocation.kept()))
            state = services.current_state()
            ok = lua_callbacks.prerun_allocated(allocation, plugin.started, state, now=ctx.now)
            for job, jt, preps in ok:
                if lua_async.wanted([r for r, _p in preps]):
                    lua_async.start(lua_async.Pending(job.id, job.restart_count, jt, tuple(preps)))

    def launch_ready(self, job: Any) -> bool:
        """hres/lua: not while the job's asynchronous pre-run runs."""
        return lua_async.launch_ready(job)

    def metrics(self) -> Sequence[Sample]:
        return metrics.samples()

    def overview_panels(self) -> Sequence[OverviewPanel]:
        return metrics.panels()

    def after_apply(self, ctx: PassContext, result: PassResult) -> None:
        if not ctx.backfill:
            # Mode 3 resources are reclaimed by preemption in the main scheduler only.
            preemption.reclaim(result, now=ctx.now)
        if lua_plugins.resources_with_plugins():
            # Jobs ended or requeued by the pass, a node failure, a cancel: their epilogs.
            lua_callbacks.run_epilogs(services.modes(), now=ctx.now)

    def nodes_freed(self, freed: Mapping[str, Any], *, now: datetime) -> None:
        if lua_plugins.resources_with_plugins():
            lua_callbacks.run_epilogs(services.modes(), now=now)

    def cycles(self) -> Sequence[Cycle]:
        return (*lua_maintenance.cycles(), *lua_async.recovery_cycles())

    def launch_fields(self, job: Any) -> Mapping[str, Any]:
        """hres/lua: what the job's nodes receive about each resource with a plugin, as its
        pre-runs left it (``prep``, in resources.yaml's order), for the node callbacks."""
        if not lua_plugins.resources_with_plugins():
            return {}
        return _launched(lua_callbacks.job_preps(job.id, job.restart_count))

    def launch_fields_many(self, jobs: Sequence[Any]) -> Mapping[int, Mapping[str, Any]]:
        """As launch_fields, for a pass's launches: the configuration in force read once
        for them all, and their preps in one query."""
        if not jobs or not lua_plugins.resources_with_plugins():
            return {job.id: {} for job in jobs}
        preps = lua_callbacks.runs_preps([(job.id, job.restart_count) for job in jobs])
        return {job.id: _launched(preps.get((job.id, job.restart_count), [])) for job in jobs}

    def node_created(self, node: Any, fields: Mapping[str, Any], *, actor: str, now: datetime) -> None:
        """``HRES=`` of a dynamic node: its configured layers, kept in ``Node.extra``."""
        text = fields.get("hres")
        if not text:
            return
        try:
            pairs = services.parse_node_hres(text)
        except (ValueError, RecursionError) as exc:
            # Bad HRES= creates the node without membership, as an unknown layer does.
            why = "nested too deeply" if isinstance(exc, RecursionError) else exc
            log.error("node %s: %s", node.name, why)
            pairs = []
        node.extra = {**(node.extra or {}), "hres": [list(p) for p in pairs]}
        node.save(update_fields=["extra"])
        services.node_join(node.name, pairs, actor=actor, now=now)

    def node_deleted(self, node: Any) -> None:
        services.node_leave(node.name)

    def nodes_reset(self, names: Sequence[str], *, actor: str, now: datetime) -> None:
        # Back to the configured layers (Slurm's hres.html, "Runtime Updates").
        services.node_configured_layers(names, actor=actor, now=now)


def _launched(preps: list[dict[str, Any]]) -> Mapping[str, Any]:
    if not preps:
        return {}
    # The pre-runs are over once the job launches: no asynchronous one is running.
    return {"hres": [{**prep, "async_running": False} for prep in preps]}
