"""``scontrol update JobId=N Account=... QOS=...``: a pending job's account and QOS,
checked as a submission's are.

slurmctld's ``update_job`` (src/slurmctld/job_mgr.c) takes a new account of a pending job
only ("Job is no longer pending execution" else), a new QOS of a pending job only when it
differs from the job's, and checks the new association, QOS and limits as at submission
(``acct_policy_validate`` with the job already counted).  Here the submission's own checks
run (the extensions' ``submit_fields``) on the job as it would be, told which key the job
is counted under now, so a submit limit does not count it twice.  An empty value asks for
the default (the user's default account, the association's default QOS), as Slurm's
blank does.  A partition moved by the same update is checked here too: the association
depends on it.
"""

from __future__ import annotations

from typing import Any

from cluster import clock, extensions
from cluster.core.states import JobState
from cluster.models import ClusterConfig, Job
from cluster.services.errors import ServiceError
from cluster.services.reservations import check_job_access

FIELDS = frozenset({"account", "qos"})


def apply(
    job: Job,
    changes: dict[str, str],
    *,
    moved: bool,
    counted_as: tuple[str, str, str, str],
    cfg: ClusterConfig,
) -> list[str]:
    """Set the job's account and QOS (not saved) after the checks; the fields set.
    ``counted_as``: the job's (user, account, partition, QOS) as stored, before the update."""
    asked = FIELDS.intersection(changes)
    if not asked and not moved:
        return []
    pending = job.state == JobState.PENDING
    if "account" in asked and not pending:
        raise ServiceError("Job is no longer pending execution", field="account")
    if "qos" in asked and not pending and changes["qos"] != job.qos:
        raise ServiceError("Job is no longer pending execution", field="qos")
    if not pending:
        return []
    account = changes["account"].strip() if "account" in asked else job.account
    qos = changes["qos"].strip() if "qos" in asked else job.qos
    checked = _submission_checks(job, account=account, qos=qos, counted_as=counted_as, cfg=cfg)
    if job.reservation:
        check_job_access(job.reservation, job.user, checked["account"])
    fields = []
    for name in ("account", "qos"):
        if checked[name] != getattr(job, name):
            setattr(job, name, checked[name])
            fields.append(name)
    return fields


def _submission_checks(
    job: Job, *, account: str, qos: str, counted_as: tuple[str, str, str, str], cfg: ClusterConfig
) -> dict[str, str]:
    common: dict[str, Any] = {
        "user": job.user,
        "account": account,
        "qos": qos,
        "partition": job.partition,
        "gres": job.gres,
        # A default the controller chose (``*name``) is chosen again, as at submission.
        "wckey": "" if job.wckey.startswith("*") else job.wckey,
        "licenses": job.licenses,
        "min_nodes": job.min_nodes,
        "num_tasks": job.num_tasks,
        "cpus_per_task": job.cpus_per_task,
        "mem_per_node": job.mem_per_node,
        "time_limit": job.time_limit,
        "time_asked": True,  # the job's limit stands: no default limit is chosen again
        # The key the job is counted under in the submit counts (limits/submit_counts.py).
        "replaces": counted_as,
    }
    out = {"account": account, "qos": qos}
    for ext in extensions.active():
        found = ext.submit_fields(common, count=1, now=clock.now(), cfg=cfg)
        out.update({k: found[k] for k in ("account", "qos") if k in found})
    return out
