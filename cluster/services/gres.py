"""GPUs and other GRES: the submission's checks, the pass's plugin, what nodes and jobs show.

The rules are in the pure core (cluster/core/gres.py); this module reads the rows they
need.  A job's devices are written with its start (``Job.gres_alloc``) and read back each
pass from the jobs that hold resources, so nothing is lost when the controller restarts,
and a job that ends frees them by leaving the holding states.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ClusterShell.NodeSet import NodeSet

from cluster.core import gres as core
from cluster.core import jobspec
from cluster.core.feasibility import NODE_CONFIG_UNAVAILABLE
from cluster.core.scheduler import SchedulerPlugin, cpu_layout_of
from cluster.core.states import HOLDING_JOB_STATES, JobState
from cluster.extensions import Allocation, ClusterExtension, PassContext
from cluster.models import ClusterConfig, Job, Node, Partition
from cluster.services import pass_snapshot, rows
from cluster.services.errors import ServiceError

# Request field -> sbatch's option.
FIELDS = {
    "gpus": "--gpus",
    "gpus_per_node": "--gpus-per-node",
    "gpus_per_task": "--gpus-per-task",
    "cpus_per_gpu": "--cpus-per-gpu",
}
# sbatch's words (slurm_opt.c) when both are given.
CPUS_PER_GPU_EXCLUSIVE = "--cpus-per-gpu is mutually exclusive with --cpus-per-task"
_PLUGIN = "gres.plugin"


def _text(spec: dict[str, Any], name: str) -> str:
    value = spec.get(name)
    if value in (None, ""):
        return ""
    return jobspec.check_text(str(value), name, FIELDS[name], max_len=64)


def gres_types(cfg: ClusterConfig) -> frozenset[str]:
    value = next((v for k, v in (cfg.options or {}).items() if k.lower() == "grestypes"), "")
    return frozenset(n.strip() for n in str(value).split(",") if n.strip())


def submitted(spec: dict[str, Any], common: dict[str, Any], cfg: ClusterConfig) -> dict[str, Any]:
    """The job's GRES fields, checked: a name not in GresTypes is Slurm's "Invalid generic
    resource (gres) specification", a request no ``N`` nodes of the partition could ever
    hold its "Requested node configuration is not available" (both refused here, as
    slurmctld refuses them at submission)."""
    try:
        texts = {name: _text(spec, name) for name in FIELDS}
        per_node = list(core.parse_gres_option(common["gres"])) if common.get("gres") else []
        if texts["gpus_per_node"]:
            per_node.append(core.parse_gpus(texts["gpus_per_node"], "--gpus-per-node"))
        per_job = core.parse_gpus(texts["gpus"], "--gpus") if texts["gpus"] else None
        per_task = (
            core.parse_gpus(texts["gpus_per_task"], "--gpus-per-task") if texts["gpus_per_task"] else None
        )
        cpus_per_gpu = (
            jobspec.parse_count(texts["cpus_per_gpu"], "--cpus-per-gpu", maximum=jobspec.MAX_INT32)
            if texts["cpus_per_gpu"]
            else None
        )
    except (ValueError, jobspec.SpecError) as exc:
        raise ServiceError(str(exc), field=getattr(exc, "field", "gres")) from None
    request = core.GresRequest(tuple(per_node), per_job, per_task)
    if not request:
        if cpus_per_gpu is not None:
            raise ServiceError(f"{core.INVALID_GRES}: --cpus-per-gpu without GPUs", field="cpus_per_gpu")
        return {}
    known = gres_types(cfg)
    unknown = sorted(request.names() - known)
    if unknown:
        raise ServiceError(f"{core.INVALID_GRES}: {unknown[0]} is not in GresTypes", field="gres")
    nodes = max(common["min_nodes"], len(NodeSet(common.get("req_nodes") or "")), 1)
    tasks = common["num_tasks"]
    partition = Partition.objects.filter(name=common["partition"]).values_list("nodes", flat=True).first()
    names = list(NodeSet(partition or ""))
    members = [
        core.parse_node_gres(text) if text else ()
        for text in Node.objects.filter(name__in=names).values_list("gres", flat=True)
    ]
    if core.never_fits(request, nodes, tasks, members):
        raise ServiceError(NODE_CONFIG_UNAVAILABLE, field="gres")
    out: dict[str, Any] = {
        "gres": core.format_gres(per_node),
        "tres_per_job": per_job.text() if per_job else "",
        "tres_per_task": per_task.text() if per_task else "",
    }
    if cpus_per_gpu is not None:
        if spec.get("cpus_per_task") not in (None, ""):
            raise ServiceError(CPUS_PER_GPU_EXCLUSIVE, field="cpus_per_gpu")
        out["cpus_per_gpu"] = cpus_per_gpu
        out["cpus_per_task"] = cpus_for_gpus(request, cpus_per_gpu, nodes, tasks)
    return out


def cpus_for_gpus(request: core.GresRequest, cpus_per_gpu: int, nodes: int, tasks: int) -> int:
    """--cpus-per-gpu as CPUs per task: the busiest node's GPUs times it, shared by the
    tasks that node runs (the scheduler charges CPUs per task)."""
    needs = core.node_needs(request, nodes, tasks)
    gpus = max((sum(c for (n, _), c in need.items() if n == "gpu") for need in needs), default=0)
    busiest = cpu_layout_of(nodes, tasks, 1)[0]
    return max(1, math.ceil(gpus * cpus_per_gpu / max(busiest, 1)))


# --------------------------------------------------------------------------- the pass


def _inventory() -> dict[str, tuple[core.GresItem, ...]]:
    out = {}
    for name, text in Node.objects.exclude(gres="").values_list("name", "gres"):
        try:
            out[name] = core.parse_node_gres(text)
        except ValueError:
            continue  # written by an older release: the configuration check refuses it now
    return out


def held_allocations() -> list[dict[str, list]]:
    """What the jobs holding resources keep: {node: entries} each."""
    holding = [s.value for s in HOLDING_JOB_STATES]
    found = Job.objects.filter(state__in=holding).exclude(gres_alloc={}).values_list("gres_alloc", flat=True)
    return [alloc for alloc in found if alloc]


_REQUEST_FIELDS = ("gres", "tres_per_job", "tres_per_task")


def pending_requests() -> dict[int, core.GresRequest]:
    """job id -> the GRES request of every pending job not held that asks for GRES.  Every
    pass reads them: kept between passes until the job table is written (shared: read-only)."""
    return pass_snapshot.kept_value("gres.pending_requests", (Job,), _read_pending_requests)


def _read_pending_requests() -> dict[int, core.GresRequest]:
    # By plain statements (rows): one for each field that may ask for GRES, a job asking
    # in several found by each.
    found = {}
    for asked in _REQUEST_FIELDS:
        where = {"state": JobState.PENDING, "hold": "", asked: rows.Not("")}
        found.update((row[0], row) for row in rows.select(Job, ("id", *_REQUEST_FIELDS), where))
    out = {}
    for job_id, per_node, per_job, per_task in (found[i] for i in sorted(found)):
        request = core.request_of(per_node, per_job, per_task)
        if request:
            out[job_id] = request
    return out


class GresExtension(ClusterExtension):
    """The nodes' GRES counted by the scheduler; the devices given written with the start."""

    name = "gres"

    def pass_plugins(self, ctx: PassContext) -> Sequence[SchedulerPlugin]:
        requests = pending_requests()
        if not requests:
            return ()
        plugin = core.GresPlugin(_inventory(), held_allocations(), requests)
        ctx.shared[_PLUGIN] = plugin
        return (plugin,)

    def jobs_allocated(self, ctx: PassContext, allocation: Allocation) -> None:
        plugin = ctx.shared.get(_PLUGIN)
        if plugin is None:
            return
        for job_id in allocation.kept():
            if job_id in plugin.taken:
                allocation.gres[job_id] = plugin.taken[job_id]


# --------------------------------------------------------------------------- shown


def node_usage(names: Iterable[str] | None = None) -> dict[str, list[list]]:
    """Node -> the entries every holding job has there."""
    wanted = set(names) if names is not None else None
    out: dict[str, list[list]] = {}
    for alloc in held_allocations():
        for node, entries in alloc.items():
            if wanted is None or node in wanted:
                out.setdefault(node, []).extend(entries)
    return out


def node_tres(gres_text: str, used: Sequence[Sequence] | None = None) -> tuple[str, str, str]:
    """(GresUsed=, the CfgTRES part, the AllocTRES part) of one node."""
    try:
        items = core.parse_node_gres(gres_text or "")
    except ValueError:
        return "", "", ""
    if not items:
        return "", "", ""
    used = used or []
    cfg = core.tres_counts(items)
    alloc = core.tres_counts(used)
    return (
        core.gres_used(items, [used]),
        "".join(f",gres/{k}={v}" for k, v in sorted(cfg.items())),
        "".join(f",gres/{k}={v}" for k, v in sorted(alloc.items()) if v),
    )


def job_gres_fields(job: Job) -> dict[str, str]:
    """scontrol show job's TresPerNode=, TresPerJob=, TresPerTask=, CpusPerTres= (set ones)."""
    out = {}
    if job.gres:
        out["tres_per_node"] = ",".join(f"gres/{i}" for i in job.gres.split(",") if i)
    if job.tres_per_job:
        out["tres_per_job"] = f"gres/{job.tres_per_job}"
    if job.tres_per_task:
        out["tres_per_task"] = f"gres/{job.tres_per_task}"
    if job.cpus_per_gpu:
        out["cpus_per_tres"] = f"gres/gpu:{job.cpus_per_gpu}"
    return out
