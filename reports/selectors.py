"""The reports' figures, read from the rollup tables only (reports/models.py).

A range ``[start, end)`` is read from the day rows of the whole local days inside it and
from the hour rows of its ragged ends, as sreport reads the rollup table with the longest
interval that covers the request.  Every figure is in seconds of a TRES unit; the CLI and
the console turn them into minutes, hours or percentages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q, QuerySet, Sum

from cluster import clock
from cluster.models import ClusterConfig
from limits.models import Association
from reports.core.rollup import DURATION_LABELS
from reports.models import AssocUsage, ClusterUsage, JobUsage, Period, RollupState
from reports.services import day_start, floor_hour, next_day

# sreport's -T names and the rollup column that holds each in the association tables.
ASSOC_TRES = {
    "cpu": "cpu_secs",
    "mem": "mem_secs",
    "node": "node_secs",
    "billing": "billing_secs",
    "gres/gpu": "gpu_secs",
}
CLUSTER_TRES = ("cpu", "mem", "node")
CLUSTER_PARTS = ("alloc", "down", "pdown", "plan", "idle", "resv", "over")


class ReportError(ValueError):
    """A report asked for what cannot be: an unknown TRES, an end before the start."""


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime

    @property
    def seconds(self) -> int:
        return int((self.end - self.start).total_seconds())


def window(start: datetime | None, end: datetime | None, *, now: datetime | None = None) -> Window:
    """sreport's range: by default yesterday (local days); a time given rounded to the
    nearest hour, and at least one hour (slurmdb_report_set_start_end_time)."""
    now = now or clock.now()
    end = day_start(now) if end is None else nearest_hour(end)
    start = day_start(day_start(now) - timedelta(hours=1)) if start is None else nearest_hour(start)
    if end - start < timedelta(hours=1):
        end = start + timedelta(hours=1)
    return Window(start, end)


def nearest_hour(t: datetime) -> datetime:
    """As slurmdbd rounds a report's ends: 30 seconds or more round the minute up, then 30
    minutes or more the hour (so 10:29:30 is 11:00)."""
    minute = t.minute + (t.second >= 30)
    hour = floor_hour(t)
    return hour + timedelta(hours=1) if minute >= 30 else hour


def _rows_in(model: type, w: Window) -> QuerySet:
    """The rows covering ``w``: whole days from the day table, the ends from the hours."""
    first_day = day_start(w.start)
    if first_day < w.start:
        first_day = next_day(first_day)
    last_day = day_start(w.end)
    # Days not rolled up whole yet are read from their hours.
    rolled = RollupState.objects.values_list("rolled_to", flat=True).first()
    if rolled is not None and day_start(rolled) < last_day:
        last_day = max(first_day, day_start(rolled))
    if first_day >= last_day:
        return model.objects.filter(period=Period.HOUR, start__gte=w.start, start__lt=w.end)
    return model.objects.filter(
        Q(period=Period.DAY, start__gte=first_day, start__lt=last_day)
        | Q(period=Period.HOUR, start__gte=w.start, start__lt=first_day)
        | Q(period=Period.HOUR, start__gte=last_day, start__lt=w.end)
    )


def cluster_name() -> str:
    cfg = ClusterConfig.objects.only("cluster_name").first()
    return cfg.cluster_name if cfg else "cluster"


def tres_list(text: str, allowed: Iterable[str]) -> list[str]:
    """``-T cpu,mem`` (``ALL``: every TRES the report knows), in the order given."""
    allowed = list(allowed)
    if not text:
        return ["cpu"]
    out: list[str] = []
    for item in (i.strip().lower() for i in text.split(",") if i.strip()):
        if item == "all":
            return allowed
        name = "gres/gpu" if item == "gpu" else item
        if name not in allowed:
            raise ReportError(f"Invalid TRES '{item}': this report knows {', '.join(allowed)}")
        if name not in out:
            out.append(name)
    if not out:
        raise ReportError("No valid TRES given")
    return out


# ---------------------------------------------------------------------------- cluster


def cluster_utilization(w: Window, tres: Sequence[str] = ("cpu",)) -> list[dict]:
    """Per TRES: the mean count, and the seconds allocated, down, planned down, planned,
    idle, reserved (part of allocated) and overcommitted, and their reported total."""
    sums = {
        row["tres"]: row
        for row in _rows_in(ClusterUsage, w)
        .filter(tres__in=tres)
        .values("tres")
        .annotate(**{p: Sum(f"{p}_secs") for p in CLUSTER_PARTS}, count_sum=Sum("count"))
    }
    hours = {
        row["tres"]: row["n"]
        for row in _rows_in(ClusterUsage, w).filter(tres__in=tres).values("tres").annotate(n=Count("id"))
    }
    out = []
    for name in tres:
        row = sums.get(name)
        if row is None:
            continue
        figures = {p: float(row[p] or 0) for p in CLUSTER_PARTS}
        figures["reported"] = sum(figures[p] for p in ("alloc", "down", "pdown", "plan", "idle"))
        out.append(
            {"tres": name, "count": round((row["count_sum"] or 0) / max(1, hours.get(name, 1))), **figures}
        )
    return out


def cluster_series(w: Window, tres: str = "cpu") -> list[dict]:
    """The utilisation over time: one point per row read (days inside, hours at the ends)."""
    rows = _rows_in(ClusterUsage, w).filter(tres=tres).order_by("start")
    return [
        {
            "start": r.start,
            "period": r.period,
            "count": r.count,
            **{p: getattr(r, f"{p}_secs") for p in CLUSTER_PARTS},
        }
        for r in rows
    ]


# ---------------------------------------------------------------------------- associations


def assoc_usage(
    w: Window, tres: Sequence[str], *, accounts: Sequence[str] = (), users: Sequence[str] = ()
) -> dict:
    """{(account, user): {tres: seconds}} over the window."""
    qs = _rows_in(AssocUsage, w)
    if users:
        qs = qs.filter(user__in=users)
    fields = {t: ASSOC_TRES[t] for t in tres}
    out: dict[tuple[str, str], dict[str, float]] = {}
    for row in qs.values("account", "user").annotate(**{f"s_{t}": Sum(f) for t, f in fields.items()}):
        out[(row["account"], row["user"])] = {t: float(row[f"s_{t}"] or 0) for t in tres}
    if accounts:
        keep = set(subtree(accounts))
        out = {k: v for k, v in out.items() if k[0] in keep}
    return out


def account_parents() -> dict[str, str]:
    """Each account's parent account ("" for root and for accounts outside the tree)."""
    return {
        a: p or ""
        for a, p in Association.objects.filter(user__isnull=True).values_list("account__name", "parent__name")
    }


def subtree(accounts: Sequence[str]) -> list[str]:
    parents = account_parents()
    wanted = {a.lower() for a in accounts}
    out = []
    for name in parents:
        at, seen = name, set()
        while at and at not in seen:
            if at.lower() in wanted:
                out.append(name)
                break
            seen.add(at)
            at = parents.get(at, "")
    out.extend(a for a in accounts if a not in parents)
    return out


def _children(parents: dict[str, str]) -> dict[str, list[str]]:
    kids: dict[str, list[str]] = defaultdict(list)
    for name, parent in parents.items():
        if name != "root":
            kids[parent or "root"].append(name)
    return kids


def account_by_user(
    w: Window, tres: Sequence[str], *, accounts: Sequence[str] = (), users: Sequence[str] = ()
) -> list[dict]:
    """sreport's AccountUtilizationByUser rows in its order: each account (its whole
    subtree's usage) followed by its users and then its sub-accounts, alphabetically,
    from root down (Slurm's hierarchical association order)."""
    usage = assoc_usage(w, tres, accounts=accounts, users=users)
    parents = account_parents()
    for account, _user in usage:
        parents.setdefault(account, "root" if account != "root" else "")
    parents.setdefault("root", "")
    kids = _children(parents)
    tree_users: dict[str, set[str]] = defaultdict(set)
    for account, user in Association.objects.filter(user__isnull=False).values_list(
        "account__name", "user__name"
    ):
        if not users or user in users:
            tree_users[account].add(user)
    for account, user in usage:
        if user:
            tree_users[account].add(user)
    zero = dict.fromkeys(tres, 0.0)
    rows: list[dict] = []
    shown = set(subtree(accounts)) if accounts else None

    # Each association's usage added to its account and every ancestor, once.
    totals: dict[str, dict[str, float]] = defaultdict(lambda: dict(zero))
    for (a, _u), v in usage.items():
        at, seen = a, set()
        while at and at not in seen:
            for t in tres:
                totals[at][t] += v[t]
            seen.add(at)
            at = parents.get(at, "")

    def total(account: str) -> dict[str, float]:
        return dict(totals[account]) if account in totals else dict(zero)

    def walk(account: str, depth: int) -> None:
        if shown is None or account in shown:
            rows.append(
                {
                    "account": account,
                    "user": "",
                    "depth": depth,
                    "parent": parents.get(account, ""),
                    "used": total(account),
                }
            )
            for user in sorted(tree_users.get(account, ())):
                rows.append({"account": account, "user": user, "depth": depth + 1, "parent": account,
                             "used": usage.get((account, user), dict(zero))})  # fmt: skip
        for child in sorted(kids.get(account, ())):
            walk(child, depth + 1)

    walk("root", 0)
    return rows


def user_by_account(
    w: Window, tres: Sequence[str], *, accounts: Sequence[str] = (), users: Sequence[str] = ()
) -> list[dict]:
    """sreport's UserUtilizationByAccount: each (user, account) with usage, the largest first."""
    usage = assoc_usage(w, tres, accounts=accounts, users=users)
    rows = [{"user": u, "account": a, "used": v} for (a, u), v in usage.items() if u]
    rows.sort(key=lambda r: (-r["used"][tres[0]], r["user"], r["account"]))
    return rows


def top_usage(
    w: Window,
    tres: Sequence[str],
    *,
    top: int = 10,
    accounts: Sequence[str] = (),
    users: Sequence[str] = (),
    group: bool = False,
) -> list[dict]:
    """sreport's ``user topusage``: the ``top`` users by usage of the first TRES, one row per
    user and account (``group``: one per user, the accounts joined with commas)."""
    rows = user_by_account(w, tres, accounts=accounts, users=users)
    if group:
        merged: dict[str, dict] = {}
        for r in rows:
            m = merged.setdefault(
                r["user"], {"user": r["user"], "accounts": [], "used": dict.fromkeys(tres, 0.0)}
            )
            m["accounts"].append(r["account"])
            for t in tres:
                m["used"][t] += r["used"][t]
        rows = [
            {"user": m["user"], "account": ",".join(sorted(m["accounts"])), "used": m["used"]}
            for m in merged.values()
        ]
        rows.sort(key=lambda r: (-r["used"][tres[0]], r["user"]))
    return rows[:top] if top > 0 else rows


# ---------------------------------------------------------------------------- jobs


def job_sizes(
    w: Window,
    grouping: Sequence[int],
    *,
    accounts: Sequence[str] = (),
    users: Sequence[str] = (),
    flat: bool = False,
) -> dict:
    """sreport's ``job SizesByAccount``: per account, the CPU-seconds and the jobs started
    in each CPU-count bucket (``grouping``'s lower bounds, then ">= last")."""
    qs = _rows_in(JobUsage, w)
    if users:
        qs = qs.filter(user__in=users)
    parents = account_parents()
    wanted = set(subtree(accounts)) if accounts else None

    def shown(account: str) -> str | None:
        if wanted is not None and account not in wanted:
            return None
        if flat:
            return account
        chain, at, seen = [], account, set()
        while at and at not in seen:
            chain.append(at)
            seen.add(at)
            at = parents.get(at, "root" if at != "root" else "")
        stops = {a.lower() for a in accounts} if accounts else {"root"}
        for i, a in enumerate(chain):
            if a.lower() in stops:
                return a if accounts else (chain[i - 1] if i > 0 else a)
        return account

    edges = sorted(set(grouping))
    n = len(edges) + (1 if edges and edges[0] > 0 else 0)
    lows = ([0] if edges and edges[0] > 0 else []) + edges
    rows: dict[str, dict] = {}
    for r in qs.values("account", "cpus").annotate(secs=Sum("cpu_secs"), jobs=Sum("started")):
        name = shown(r["account"])
        if name is None:
            continue
        idx = max(i for i, low in enumerate(lows) if r["cpus"] >= low) if r["cpus"] >= lows[0] else 0
        row = rows.setdefault(name, {"account": name, "secs": [0.0] * n, "jobs": [0] * n})
        row["secs"][idx] += float(r["secs"] or 0)
        row["jobs"][idx] += int(r["jobs"] or 0)
    return {"lows": lows, "rows": [rows[k] for k in sorted(rows)]}


def job_distributions(w: Window, *, accounts: Sequence[str] = (), users: Sequence[str] = ()) -> dict:
    """Waits and run times as histograms, jobs by CPU count, and throughput over time."""
    qs = _rows_in(JobUsage, w)
    if users:
        qs = qs.filter(user__in=users)
    if accounts:
        qs = qs.filter(account__in=subtree(accounts))
    wait = [0] * len(DURATION_LABELS)
    run = [0] * len(DURATION_LABELS)
    sizes: dict[int, int] = defaultdict(int)
    through: dict[datetime, list[int]] = {}
    for r in qs.values("start", "cpus", "started", "ended", "wait_hist", "run_hist"):
        wait = [a + b for a, b in zip(wait, r["wait_hist"], strict=False)]
        run = [a + b for a, b in zip(run, r["run_hist"], strict=False)]
        sizes[r["cpus"]] += r["started"]
        t = through.setdefault(r["start"], [0, 0])
        t[0] += r["started"]
        t[1] += r["ended"]
    return {
        "labels": list(DURATION_LABELS),
        "wait": wait,
        "run": run,
        "sizes": sorted(sizes.items()),
        "throughput": [(t, s, e) for t, (s, e) in sorted(through.items())],
    }
