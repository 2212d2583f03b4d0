"""What the limits show: ``sshare`` rows, ``scontrol show assoc_mgr``, the console's account
tree, effective-limit calculator and "why is this job pending" explainer.  Reads only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cluster import clock
from cluster.core.states import ACTIVE_JOB_STATES, JobState
from cluster.models import Job
from limits import selectors
from limits.core.policy import ROOT, Association, JobRequest, LimitBlock, LimitState, Policy, ResolvedLimit
from limits.core.priority import fair_tree
from limits.core.shapes import requested_shape
from limits.core.usage import EMPTY, UsageKey, UsageRecord, qos_key
from slurmwords.tres import DEFAULT_TRES, format_count, format_tres, sort_key

# --------------------------------------------------------------------------- sshare


def accounts_tree(policy: Policy) -> list[tuple[int, Association]]:
    """Associations depth first: (depth, association), users before sub-accounts."""
    out: list[tuple[int, Association]] = []
    users: dict[str, list[Association]] = {}
    for a in policy.assocs.values():
        if a.user:
            users.setdefault(a.account, []).append(a)

    def walk(account: str, depth: int) -> None:
        node = policy.account(account)
        if node is None:
            return
        out.append((depth, node))
        for u in sorted(users.get(account, []), key=lambda x: (x.user, x.partition)):
            out.append((depth + 1, u))
        for child in sorted(policy.children.get(account, []), key=lambda x: x.account):
            walk(child.account, depth + 1)

    walk(ROOT, 0)
    return out


def _siblings(policy: Policy, a: Association) -> list[Association]:
    if a.user:
        return [x for x in policy.assocs.values() if x.user and x.account == a.account] + list(
            policy.children.get(a.account, [])
        )
    if a.account == ROOT:
        return [a]
    parent = a.parent or ROOT
    return list(policy.children.get(parent, [])) + [
        x for x in policy.assocs.values() if x.user and x.account == parent
    ]


def _shares(a: Association) -> int:
    return 0 if a.fairshare == "parent" else int(a.fairshare)


def tres_raw(record: UsageRecord) -> str:
    """GrpTRESRaw: TRES-minutes used per TRES (decayed), every default TRES shown."""
    names = sorted(set(DEFAULT_TRES) | set(record.tres_seconds), key=sort_key)
    return ",".join(f"{n}={int(record.tres_seconds.get(n, 0.0) // 60)}" for n in names)


def share_rows(
    *, accounts: Iterable[str] = (), users: Iterable[str] = (), all_users: bool = True
) -> list[dict[str, str]]:
    """sshare: one row per association in tree order, columns named as sshare's headers.
    ``Account`` is indented one space per level, as sshare prints it."""
    ctx = selectors.context()
    policy = ctx.policy
    usage = selectors.usage_records()
    fs = fair_tree(policy, usage) if policy.assocs else {}
    root = usage.get(("assoc", ROOT, "", ""), EMPTY).raw_usage
    wanted_accounts = set(accounts)
    wanted_users = set(users)
    run_mins = tres_run_mins(policy, _active(policy)[0], clock.timestamp()) if policy.assocs else {}
    rows = []
    for depth, a in accounts_tree(policy):
        if wanted_accounts and a.account not in wanted_accounts:
            continue
        if a.user and ((wanted_users and a.user not in wanted_users) or (not all_users and not wanted_users)):
            continue
        # sshare -u: the user's associations and the accounts they are in.
        if (
            not a.user
            and wanted_users
            and not wanted_accounts
            and a.account != ROOT
            and not any(x.user in wanted_users for x in policy.assocs.values() if x.account == a.account)
        ):
            continue
        rec = usage.get(a.key, EMPTY)
        sibs = _siblings(policy, a)
        total = sum(_shares(s) for s in sibs)
        rows.append(
            {
                "Account": " " * depth + a.account,
                "User": a.user,
                "Partition": a.partition,
                "Cluster": ctx.cluster,
                "RawShares": "" if a.account == ROOT and not a.user else str(a.fairshare),
                "NormShares": f"{(_shares(a) / total) if total else 0:.6f}"
                if a.account != ROOT or a.user
                else "",
                "RawUsage": str(int(rec.raw_usage)),
                "NormUsage": f"{(rec.raw_usage / root) if root else 0:.6f}",
                "EffectvUsage": f"{(rec.raw_usage / root) if root else 0:.6f}",
                "FairShare": f"{fs.get(a.key, 0.0):.6f}" if a.user else "",
                "LevelFS": "",
                "GrpTRESMins": format_tres(a.limits.grp_tres_mins),
                "GrpTRESRaw": tres_raw(rec),
                "TRESRunMins": format_run_mins(run_mins.get(a.key, {})),
            }
        )
    return rows


# --------------------------------------------------------------------------- assoc_mgr


def _counted(limits: Mapping[str, int], used: Mapping[str, float], names: Iterable[str]) -> str:
    """``cpu=100(12),mem=N(0)``: the limit (N: none) and the usage, as assoc_mgr prints."""
    keys = sorted(set(DEFAULT_TRES) | set(limits) | set(names), key=sort_key)
    parts = []
    for k in keys:
        limit = format_count(k, limits[k]) if k in limits else "N"
        parts.append(f"{k}={limit}({int(used.get(k, 0.0))})")
    return ",".join(parts)


def _half_lives(own: Mapping[str, int], default: float) -> str:
    """The half-life the controller applies to each TRES's GrpTRESMins usage, in seconds:
    TresDecayHalfLife where set (0 never decays), else PriorityDecayHalfLife."""
    names = sorted(set(DEFAULT_TRES) | set(own), key=sort_key)
    return ",".join(f"{n}={own.get(n, int(default))}" for n in names)


def assoc_mgr() -> dict:
    """``scontrol show assoc_mgr``: the association and QOS records as the controller
    holds them, with their usage and the decay half-lives in force."""
    ctx = selectors.context()
    policy = ctx.policy
    usage = selectors.usage_records()
    half = ctx.priority.decay_half_life
    header = [
        f"ClusterName={ctx.cluster} AccountingStorageEnforce={ctx.enforce}",
        f"PriorityType={'priority/multifactor' if ctx.multifactor else 'priority/basic'} "
        f"PriorityDecayHalfLife={selectors.time_str(int(half // 60)) if half else '00:00:00'} "
        f"PriorityUsageResetPeriod={ctx.priority.usage_reset_period}",
    ]
    assocs = []
    for _depth, a in accounts_tree(policy):
        rec = usage.get(a.key, EMPTY)
        lim = a.limits
        mins = {k: v / 60 for k, v in rec.tres_seconds.items()}
        parent = "" if a.user or a.account == ROOT else (a.parent or ROOT)
        assocs.append(
            {
                "account": a.account,
                "user": a.user,
                "lines": [
                    f"ClusterName={ctx.cluster} Account={a.account} UserName={a.user} "
                    f"Partition={a.partition}",
                    f"SharesRaw={a.fairshare} UsageRaw={rec.raw_usage:.2f} ParentAccount={parent}",
                    f"GrpJobs={_n(lim.grp_jobs)} GrpSubmitJobs={_n(lim.grp_submit_jobs)} "
                    f"GrpWall={_n(lim.grp_wall)}({rec.wall_mins:.2f})",
                    f"GrpTRES={_counted(lim.grp_tres, {}, ())}",
                    f"GrpTRESMins={_counted(lim.grp_tres_mins, mins, mins)}",
                    f"GrpTRESRunMins={_counted(lim.grp_tres_run_mins, {}, ())}",
                    f"TresDecayHalfLife={_half_lives(a.tres_decay_half_life, half)}",
                    f"MaxJobs={_e(lim.max_jobs)} MaxSubmitJobs={_e(lim.max_submit_jobs)} "
                    f"MaxWallPJ={_e(lim.max_wall_duration_per_job)}",
                    f"MaxTRESPJ={format_tres(lim.max_tres_per_job)} "
                    f"MaxTRESPN={format_tres(lim.max_tres_per_node)} "
                    f"MaxTRESMinsPJ={format_tres(lim.max_tres_mins_per_job)} "
                    f"MinPrioThresh={_e(lim.min_prio_threshold)}",
                ],
            }
        )
    qos = []
    for q in sorted(policy.qos.values(), key=lambda x: x.name):
        rec = usage.get(qos_key(q.name), EMPTY)
        mins = {k: v / 60 for k, v in rec.tres_seconds.items()}
        no_decay = q.has("NoDecay")
        qos.append(
            {
                "name": q.name,
                "lines": [
                    f"QOS={q.name} Priority={q.priority} UsageFactor={q.usage_factor:.6f} "
                    f"Flags={','.join(sorted(q.flags)) or 'None'}",
                    f"UsageRaw={rec.raw_usage:.2f} GrpWall={_n(q.limits.grp_wall)}({rec.wall_mins:.2f})",
                    f"GrpTRESMins={_counted(q.limits.grp_tres_mins, mins, mins)}",
                    "TresDecayHalfLife="
                    + ("NoDecay" if no_decay else _half_lives(q.tres_decay_half_life, half)),
                ],
            }
        )
    return {"header": header, "associations": assocs, "qos": qos}


def _n(value: int | None) -> str:
    return "N" if value is None else str(value)


def _e(value: int | None) -> str:
    return "" if value is None else str(value)


# --------------------------------------------------------------------------- console


@dataclass(frozen=True)
class LimitUse:
    """One limit in effect with how close usage is to it (the calculator and the tree)."""

    limit: ResolvedLimit
    used: float | None

    @property
    def percent(self) -> float | None:
        if self.used is None or not self.limit.value:
            return None
        return min(100.0, 100.0 * self.used / self.limit.value)


def limit_state(policy: Policy, usage: Mapping[UsageKey, UsageRecord]) -> LimitState:
    """A LimitState over the active jobs, as the scheduler's pass builds it."""
    running, pending = _active(policy)
    return LimitState(policy, running=running, pending=pending, usage=usage, now=clock.timestamp())


def _active(policy: Policy) -> tuple[list[JobRequest], list[JobRequest]]:
    """The active jobs as the core's requests: (running, pending)."""

    rows = Job.objects.filter(state__in=[s.value for s in ACTIVE_JOB_STATES]).values(
        "id", "user", "account", "partition", "qos", "state", "min_nodes", "num_tasks", "cpus_per_task",
        "mem_per_node", "time_limit", "licenses", "gres", "submit_time", "start_time",
        "accounting__accrue_time", "accounting__usage_factor",
    )  # fmt: skip
    running, pending = [], []
    for r in rows:
        req = JobRequest(
            job_id=r["id"],
            user=r["user"],
            account=r["account"],
            partition=r["partition"],
            qos=r["qos"],
            shape=requested_shape(policy, r["partition"], r),
            submit_time=r["submit_time"].timestamp(),
            running=r["state"] != JobState.PENDING,
            start_time=r["start_time"].timestamp() if r["start_time"] else None,
            accrue_time=r["accounting__accrue_time"],
            usage_factor=r["accounting__usage_factor"],
        )
        (pending if r["state"] == JobState.PENDING else running).append(req)
    return running, pending


def tres_run_mins(
    policy: Policy, running: Iterable[JobRequest], now: float
) -> dict[UsageKey, dict[str, float]]:
    """sshare's TRESRunMins: the TRES-minutes the running jobs still hold (TRES times the
    time left of their limit, at the UsageFactor booked when they started, as GrpTRESRunMins
    counts them), per association and each of its ancestors."""
    out: dict[UsageKey, dict[str, float]] = {}
    for job in running:
        plan = policy.plan(job.user, job.account, job.partition, job.qos)
        limit = job.shape.time_limit
        if plan.error is not None or limit is None:
            continue  # no limit: Slurm books nothing it could count down
        factor = job.usage_factor if job.usage_factor is not None else plan.usage_factor
        started = job.start_time if job.start_time is not None else now
        mins = max(0.0, started + limit * 60 - now) / 60.0 * factor
        for key in plan.usage_keys:
            if key[0] != "assoc":
                continue
            held = out.setdefault(key, {})
            for t, n in job.shape.tres.items():
                held[t] = held.get(t, 0.0) + n * mins
    return out


def format_run_mins(run: Mapping[str, float]) -> str:
    """``cpu=120,mem=240000,...``: every default TRES, then any other one held, whole minutes."""
    names = sorted(set(DEFAULT_TRES) | set(run), key=sort_key)
    return ",".join(f"{n}={int(run.get(n, 0.0))}" for n in names)


def _used(state: LimitState, r: ResolvedLimit) -> float | None:
    c = state.counters.get(r.counter)
    rec = state.usage.get(r.counter, EMPTY)
    if r.limit in ("GrpTRESMins",):
        return rec.tres_mins(r.tres)
    if r.limit == "GrpWall":
        return rec.wall_mins
    if c is None:
        return (
            0.0
            if r.limit in ("GrpJobs", "MaxJobs", "MaxJobsPerAccount", "GrpTRES", "MaxTRESPerUser")
            else None
        )
    if r.limit in ("GrpJobs", "MaxJobs", "MaxJobsPerAccount"):
        return float(c.running)
    if r.limit in ("GrpSubmitJobs", "MaxSubmitJobs", "MaxSubmitJobsPerAccount"):
        return float(c.submitted)
    if r.limit in ("GrpTRES", "MaxTRESPerUser", "MaxTRESPerAccount"):
        return float(c.tres.get(r.tres, 0))
    if r.limit == "GrpTRESRunMins":
        return c.run_mins.get(r.tres, 0.0)
    return None


def effective(user: str, account: str, partition: str = "", qos: str = "") -> list[LimitUse]:
    """Every limit for (user, account, partition, QOS), its level, and usage against it."""
    ctx = selectors.context()
    eff = ctx.policy.resolve(user, account, partition, qos)
    state = limit_state(ctx.policy, selectors.usage_records())
    return [LimitUse(r, _used(state, r)) for r in eff.limits]


def job_request(policy: Policy, job: Job) -> JobRequest:
    """A stored job as the limits core asks about it."""
    fields = {
        "min_nodes": job.min_nodes,
        "num_tasks": job.num_tasks,
        "cpus_per_task": job.cpus_per_task,
        "mem_per_node": job.mem_per_node,
        "time_limit": job.time_limit,
        "licenses": job.licenses,
        "gres": job.gres,
    }
    return JobRequest(
        job_id=job.id,
        user=job.user,
        account=job.account,
        partition=job.partition,
        qos=job.qos,
        shape=requested_shape(policy, job.partition, fields),
        submit_time=job.submit_time.timestamp(),
    )


def explain(job: Job) -> list[LimitBlock]:
    """Every limit holding a pending job back, with its level (empty: none do)."""
    ctx = selectors.context()
    if not ctx.enforce.associations or job.state != JobState.PENDING:
        return []
    state = limit_state(ctx.policy, selectors.usage_records())
    return state.explain(job_request(ctx.policy, job))


_RUNNING_LIMITS = frozenset(
    {
        "GrpJobs",
        "MaxJobs",
        "MaxJobsPerAccount",
        "GrpTRES",
        "MaxTRESPerUser",
        "MaxTRESPerAccount",
        "GrpTRESRunMins",
    }
)


def release_hint(block: LimitBlock) -> str:
    """What would let the job go, in an administrator's words."""
    r = block.limit
    if r is None:
        return "Add the association (sacctmgr add user ... account=...) or submit with another account/QOS."
    where = r.source
    target = (
        f"qos {where.name}"
        if where.scope == "qos"
        else f"partition {where.name} (slurm.conf)"
        if where.scope == "partition"
        else f"the association {where.name}"
    )
    if r.limit == "GrpTRESMins":
        return (
            f"Raise {r.field} on {target} (sacctmgr modify ... set {r.field}={r.tres}=N) "
            "or clear its usage (set RawUsage=0); decay may also release it unless "
            "TresDecayHalfLife is 0."
        )
    if r.limit in _RUNNING_LIMITS:
        return f"Released when running jobs of {target} end, or raise {r.field} there."
    return f"Change the job's request, or raise {r.field} on {target}."
