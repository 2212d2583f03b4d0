"""Console pages of the limits (read only): the account tree with each association's
limits and usage, the effective-limit calculator, and "why is this job pending"."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from cluster import explainer, visibility
from cluster.core.states import JobState
from cluster.models import Job, Partition
from cluster.views import console_view
from limits import console_rows, private_data, reports, selectors
from limits.core.policy import PolicyError
from limits.core.usage import EMPTY, UsageRecord
from slurmwords.tres import format_count

_TRES_LIMITS = (
    ("grp_tres_mins", "GrpTRESMins"),
    ("grp_tres", "GrpTRES"),
    ("grp_tres_run_mins", "GrpTRESRunMins"),
    ("max_tres_per_job", "MaxTRESPerJob"),
    ("max_tres_per_node", "MaxTRESPerNode"),
    ("max_tres_mins_per_job", "MaxTRESMinsPerJob"),
)
_COUNT_LIMITS = (
    ("grp_jobs", "GrpJobs"),
    ("grp_submit_jobs", "GrpSubmitJobs"),
    ("max_jobs", "MaxJobs"),
    ("max_submit_jobs", "MaxSubmitJobs"),
    ("max_wall_duration_per_job", "MaxWall"),
)


def _tres_used(field: str, tres: str, rec: UsageRecord, counter: object | None) -> float | None:
    """Usage against one TRES limit of an association: decayed minutes for GrpTRESMins,
    what its running jobs hold (GrpTRES) or have booked (GrpTRESRunMins); None where the
    limit counts per job or node and has no standing usage."""
    if field == "grp_tres_mins":
        return rec.tres_mins(tres)
    if field == "grp_tres":
        return float(counter.tres.get(tres, 0)) if counter is not None else 0.0
    if field == "grp_tres_run_mins":
        return counter.run_mins.get(tres, 0.0) if counter is not None else 0.0
    return None


def _count_used(field: str, user: bool, counter: object | None) -> float | None:
    """Jobs counted against GrpJobs/GrpSubmitJobs, and MaxJobs/MaxSubmitJobs on a user's own
    association (set on an account they count per user, so the account row has no usage)."""
    running = field in ("grp_jobs", "max_jobs")
    if field in ("max_jobs", "max_submit_jobs") and not user:
        return None
    if field not in ("grp_jobs", "grp_submit_jobs", "max_jobs", "max_submit_jobs"):
        return None
    if counter is None:
        return 0.0
    return float(counter.running if running else counter.submitted)


def _tree_context(request: HttpRequest) -> dict:
    ctx = selectors.context()
    policy = ctx.policy
    usage = selectors.usage_records()
    # The pass's own counters over the active jobs: what each group holds right now.
    counters = reports.limit_state(policy, usage).counters if policy.assocs else {}
    rows = []
    for depth, a in reports.accounts_tree(policy):
        rec = usage.get(a.key, EMPTY)
        counter = counters.get(a.key)
        limits = []
        lim = a.limits
        for field, label in _TRES_LIMITS:
            for tres, value in getattr(lim, field).items():
                used = _tres_used(field, tres, rec, counter)
                limits.append(_bar(f"{label}={tres}={format_count(tres, value)}", used, value))
        for field, label in _COUNT_LIMITS:
            value = getattr(lim, field)
            if value is not None:
                limits.append(_bar(f"{label}={value}", _count_used(field, bool(a.user), counter), value))
        if lim.grp_wall is not None:
            limits.append(_bar(f"GrpWall={lim.grp_wall}", rec.wall_mins, lim.grp_wall))
        rows.append(
            {
                "depth": depth,
                "indent": depth * 1.25,
                "account": a.account,
                "user": a.user,
                "partition": a.partition,
                "label": a.label,
                "fairshare": a.fairshare,
                "raw_usage": int(rec.raw_usage),
                "tres_raw": reports.tres_raw(rec),
                "tres_minutes": console_rows.tres_minutes(rec),
                "limits": limits,
                "half_life": ",".join(f"{k}={v}" for k, v in a.tres_decay_half_life.items()),
            }
        )
    held = Job.objects.filter(visibility.visible_jobs(request.user), state=JobState.PENDING).exclude(
        reason__in=["None", "Priority", "Resources"]
    )
    return {
        "rows": private_data.tree_rows(request.user, rows),
        "enforce": str(ctx.enforce),
        "multifactor": ctx.multifactor,
        "held": held.order_by("id")[:200],
        "qos": console_rows.qos_rows(list(policy.qos.values())),
    }


def _bar(label: str, used: float | None, limit: float) -> dict:
    pct = None if used is None or not limit else min(100.0, 100.0 * used / limit)
    return {"label": label, "used": _num(used), "pct": pct}


def _num(used: float | None) -> float | int | None:
    """Usage as shown: whole counts without a decimal point (4, not 4.0)."""
    if used is None:
        return None
    return int(used) if float(used).is_integer() else round(used, 1)


@console_view
def tree(request: HttpRequest) -> HttpResponse:
    return render(request, "limits/tree.html", {"nav": "limits", **_tree_context(request)})


@console_view
def tree_fragment(request: HttpRequest) -> HttpResponse:
    return render(request, "limits/_tree.html", _tree_context(request))


@console_view
def calculator(request: HttpRequest) -> HttpResponse:
    q = request.GET
    choice = {k: q.get(k, "").strip() for k in ("user", "account", "partition", "qos")}
    ctx = selectors.context()
    policy = ctx.policy
    result, error = None, ""
    if choice["user"]:
        try:
            result = [
                {
                    "limit": u.limit.label,
                    "reason": u.limit.reason,
                    "level": u.limit.source.level,
                    "source": str(u.limit.source),
                    "used": _num(u.used),
                    "pct": u.percent,
                }
                for u in reports.effective(
                    choice["user"], choice["account"], choice["partition"], choice["qos"]
                )
            ]
        except PolicyError as exc:
            error = str(exc)
    context = {
        "nav": "limits",
        "choice": choice,
        "result": result,
        "error": error,
        "users": sorted(policy.users),
        "accounts": sorted(a.account for a in policy.assocs.values() if not a.user),
        "partitions": list(Partition.objects.values_list("name", flat=True)),
        "qos_names": sorted(policy.qos),
    }
    return render(request, "limits/calculator.html", context)


@console_view
def job_explain(request: HttpRequest, job_id: int) -> HttpResponse:
    """The job page's explainer on a page of its own (cluster.explainer: the same causes and
    start estimate as the job page, the API and fsched explain)."""
    job = Job.objects.filter(visibility.visible_jobs(request.user), pk=job_id).first()
    if job is None:
        raise Http404(f"Invalid job id specified: {job_id}")
    why = explainer.explain(job, now=timezone.now())
    return render(request, "limits/job.html", {"nav": "limits", "job": job, "why": why})
