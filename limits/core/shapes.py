"""The shape a job has for the limits: what it asks for while pending, what it holds while
running. One rule for the submit checks, the pass, the usage cycle and the explainer, so
that what a job is refused for and what it is shown as blocked by agree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.core.licenses import limit_counts
from limits.core.policy import JobShape, Policy, make_shape
from slurmwords.tres import TresError, gres_tres


def requested_shape(policy: Policy, partition: str, fields: Mapping[str, Any]) -> JobShape:
    nodes = max(int(fields.get("min_nodes") or 1), 1)
    cpus = max(int(fields.get("num_tasks") or 1), nodes) * max(int(fields.get("cpus_per_task") or 1), 1)
    mem = fields.get("mem_per_node") or 0
    limit = fields.get("time_limit")
    licenses = limit_counts(fields.get("licenses") or "", running=False)
    return make_shape(
        policy,
        partition,
        cpus=cpus,
        mem=mem * nodes,
        nodes=nodes,
        time_limit=None if limit in (None, 0) else int(limit),
        gres_per_node=_gres(fields.get("gres")),
        licenses=_plain_licenses(licenses),
    )


def _gres(text: str | None) -> dict[str, int] | None:
    """A stored --gres request as TRES per node (validated at submission; a row from
    before validation that no longer parses counts no GRES rather than failing the pass)."""
    if not text:
        return None
    try:
        return gres_tres(text)
    except TresError:
        return None


def _plain_licenses(licenses: Mapping[str, int] | None) -> dict[str, int] | None:
    if not licenses:
        return None
    return {k: v for k, v in licenses.items() if isinstance(v, int)}


def running_shape(policy: Policy, job: Mapping[str, Any]) -> JobShape:
    alloc = job["alloc"] or {}
    nodes = max(len(alloc), 1)
    cpus = sum(v[0] for v in alloc.values()) or job["num_tasks"] * job["cpus_per_task"]
    mem = sum(v[1] for v in alloc.values())
    limit = job["time_limit"]
    return make_shape(
        policy,
        job["partition"],
        cpus=cpus,
        mem=mem,
        nodes=nodes,
        time_limit=None if not limit else int(limit),
        cpus_per_node=max((v[0] for v in alloc.values()), default=cpus),
        mem_per_node=max((v[1] for v in alloc.values()), default=0),
        gres_per_node=_gres(job.get("gres")),
        licenses=_plain_licenses(limit_counts(job["licenses"], running=True, held=job["licenses_alloc"])),
    )
