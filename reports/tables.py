"""The console's reports as tables: one table per report (the rows the page shows and the
export downloads, CSV, JSON or XLSX, through cluster.exports), and the data of its charts.

Figures are hours (node-, CPU-, billing-, GPU-hours; memory in GB-hours) to two decimals.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q, Sum

from reports import selectors
from reports.core.rollup import DURATION_LABELS
from reports.models import EventCount, JobUsage, NodeHours, Sample

PARTS = (
    ("alloc", "Allocated"),
    ("down", "Down"),
    ("pdown", "PLND Down"),
    ("idle", "Idle"),
    ("plan", "Planned"),
)
REPORTS = {
    "utilization": "Cluster utilisation",
    "usage": "Usage by account and user",
    "jobs": "Job sizes, waits and run times",
    "power": "Power saving",
    "nodes": "Power-state hours per node",
    "hres": "HRES layer utilisation",
    "load": "Load-threshold drains and stops",
    "limits": "Limits hit, by reason",
}
# Slurm's reason codes for a job held by an association's or a QOS's limit.
LIMIT_PREFIXES = ("Assoc", "QOS")


@dataclass
class Table:
    report: str
    headers: list[str]
    rows: list[list[Any]]
    charts: dict[str, Any] = field(default_factory=dict)
    depth: list[int] = field(default_factory=list)  # per row, the account tree's indentation

    @property
    def title(self) -> str:
        return REPORTS[self.report]


def hours(seconds: float) -> float:
    return round(seconds / 3600, 2)


def utilization(w: selectors.Window) -> Table:
    cpu = selectors.cluster_series(w, "cpu")
    node = {r["start"]: r for r in selectors.cluster_series(w, "node")}
    headers = ["Start", "Period", "CPUs"]
    headers += [f"{label} CPU-hours" for _, label in PARTS] + ["Reserved CPU-hours"]
    headers += [f"{label} node-hours" for _, label in PARTS]
    rows = []
    for r in cpu:
        n = node.get(r["start"], {})
        rows.append(
            [r["start"], r["period"], r["count"], *(hours(r[p]) for p, _ in PARTS), hours(r["resv"]),
             *(hours(n.get(p, 0)) for p, _ in PARTS)]
        )  # fmt: skip
    chart = {
        "x": [r["start"].isoformat() for r in cpu],
        "series": [{"name": label, "y": [hours(r[p]) for r in cpu]} for p, label in PARTS],
        "unit": "CPU-hours",
    }
    return Table("utilization", headers, rows, {"stack": chart})


USAGE_TRES = (
    ("cpu", "CPU-hours"),
    ("node", "Node-hours"),
    ("billing", "Billing-hours"),
    ("gres/gpu", "GPU-hours"),
)


def usage(w: selectors.Window, *, accounts: Sequence[str], users: Sequence[str]) -> Table:
    tres = [t for t, _ in USAGE_TRES] + ["mem"]
    tree = selectors.account_by_user(w, tres, accounts=accounts, users=users)
    headers = ["Account", "User", *(label for _, label in USAGE_TRES), "Memory GB-hours"]
    rows = [
        [
            r["account"],
            r["user"],
            *(hours(r["used"][t]) for t, _ in USAGE_TRES),
            hours(r["used"]["mem"] / 1024),
        ]
        for r in tree
    ]
    top = selectors.top_usage(w, ["cpu"], top=10, accounts=accounts, users=users, group=True)
    chart = {"x": [r["user"] for r in top], "y": [hours(r["used"]["cpu"]) for r in top], "unit": "CPU-hours"}
    return Table("usage", headers, rows, {"top": chart}, depth=[r["depth"] for r in tree])


def jobs(w: selectors.Window, *, accounts: Sequence[str], users: Sequence[str]) -> Table:
    dist = selectors.job_distributions(w, accounts=accounts, users=users)
    qs = selectors._rows_in(JobUsage, w)
    if users:
        qs = qs.filter(user__in=users)
    if accounts:
        qs = qs.filter(account__in=selectors.subtree(accounts))
    sizes = defaultdict(lambda: [0, 0.0])
    for r in qs.values("cpus").annotate(n=Sum("started"), secs=Sum("cpu_secs")):
        sizes[r["cpus"]][0] += r["n"] or 0
        sizes[r["cpus"]][1] += r["secs"] or 0.0
    headers = ["CPUs", "Jobs started", "CPU-hours"]
    rows = [[cpus, n, hours(secs)] for cpus, (n, secs) in sorted(sizes.items())]
    charts = {
        "durations": {"x": list(DURATION_LABELS), "wait": dist["wait"], "run": dist["run"]},
        "throughput": {
            "x": [t.isoformat() for t, _, _ in dist["throughput"]],
            "started": [s for _, s, _ in dist["throughput"]],
            "ended": [e for _, _, e in dist["throughput"]],
        },
        "sizes": {"x": [str(r[0]) for r in rows], "y": [r[1] for r in rows]},
    }
    return Table("jobs", headers, rows, charts)


def power(w: selectors.Window) -> Table:
    """Node-hours powered down (and FUTURE or in MAINT reservations: sreport's PLND Down),
    the hours power saving kept nodes off, beside those down and up."""
    node = selectors.cluster_series(w, "node")
    headers = ["Start", "Period", "Nodes", "Powered-down node-hours", "Down node-hours", "Up node-hours"]
    rows = []
    for r in node:
        up = r["alloc"] + r["idle"] + r["plan"]
        rows.append([r["start"], r["period"], r["count"], hours(r["pdown"]), hours(r["down"]), hours(up)])
    chart = {
        "x": [r[0].isoformat() for r in rows],
        "series": [
            {"name": h, "y": [r[i] for r in rows]} for i, h in ((3, "powered down"), (4, "down"), (5, "up"))
        ],
        "unit": "node-hours",
    }
    return Table("power", headers, rows, {"stack": chart})


def nodes(w: selectors.Window) -> Table:
    """Each node's hours powered down (PLND Down) and down over the range, the most first."""
    per = (
        selectors._rows_in(NodeHours, w)
        .values("node")
        .annotate(pdown=Sum("pdown_secs"), down=Sum("down_secs"))
    )
    rows = sorted(
        ([r["node"], hours(r["pdown"] or 0), hours(r["down"] or 0)] for r in per),
        key=lambda r: (-r[1], -r[2], r[0]),
    )
    headers = ["Node", "Powered-down hours", "Down hours"]
    chart = {
        "x": [r[0] for r in rows[:50]],
        "series": [
            {"name": "powered down", "y": [r[1] for r in rows[:50]]},
            {"name": "down", "y": [r[2] for r in rows[:50]]},
        ],
        "unit": "hours",
    }
    return Table("nodes", headers, rows, {"stack": chart})


def hres(w: selectors.Window) -> Table:
    """Each layer's use over time, from the hourly samples (days: their hours' mean)."""
    qs = selectors._rows_in(Sample, w).filter(kind="hres").order_by("start", "name")
    headers = ["Start", "Period", "Layer", "Used", "Total", "Use %"]
    rows = [
        [r.start, r.period, r.name, round(r.value, 2), round(r.total, 2),
         round(100 * r.value / r.total, 1) if r.total else 0.0]
        for r in qs
    ]  # fmt: skip
    layers: dict[str, dict[str, list]] = {}
    for r in rows:
        layer = layers.setdefault(r[2], {"x": [], "y": []})
        layer["x"].append(r[0].isoformat())
        layer["y"].append(r[5])
    return Table(
        "hres",
        headers,
        rows,
        {"lines": {"series": [{"name": k, **v} for k, v in layers.items()], "unit": "% used"}},
    )


def load(w: selectors.Window, users: Sequence[str] = ()) -> Table:
    """The load check's drains (per node) and stops (per user: one's own only when ``users``)."""
    qs = (
        selectors._rows_in(EventCount, w)
        .filter(what__in=("load_drain", "load_stop"))
        .order_by("start", "what", "name")
    )
    if users:
        qs = qs.filter(Q(what="load_drain") | Q(name__in=users))
    words = {"load_drain": "node drained", "load_stop": "job stopped"}
    headers = ["Start", "Period", "What", "Node or user", "Count"]
    rows = [[r.start, r.period, words[r.what], r.name, r.count] for r in qs]
    per: dict[str, dict[str, int]] = {w_: defaultdict(int) for w_ in words.values()}
    for r in rows:
        per[r[2]][r[0].isoformat()] += r[4]
    x = sorted({r[0].isoformat() for r in rows})
    chart = {
        "x": x,
        "series": [{"name": k, "y": [v.get(t, 0) for t in x]} for k, v in per.items()],
        "unit": "times",
    }
    return Table("load", headers, rows, {"stack": chart})


def limits(w: selectors.Window) -> Table:
    """The pending jobs held by an association's or a QOS's limit, by reason, as sampled each
    hour (a day: the mean of its hours)."""
    qs = selectors._rows_in(Sample, w).filter(kind="pending").order_by("start", "name")
    headers = ["Start", "Period", "Reason", "Pending jobs"]
    rows = [[r.start, r.period, r.name, round(r.value, 2)] for r in qs if r.name.startswith(LIMIT_PREFIXES)]
    totals: dict[str, float] = defaultdict(float)
    for r in rows:
        totals[r[2]] += r[3]
    chart = {
        "x": list(totals),
        "y": [round(v, 2) for v in totals.values()],
        "unit": "pending jobs (summed samples)",
    }
    return Table("limits", headers, rows, {"top": chart})


def build(report: str, w: selectors.Window, *, accounts: Sequence[str], users: Sequence[str]) -> Table:
    if report == "usage":
        return usage(w, accounts=accounts, users=users)
    if report == "jobs":
        return jobs(w, accounts=accounts, users=users)
    if report == "power":
        return power(w)
    if report == "load":
        return load(w, users)
    if report == "nodes":
        return nodes(w)
    if report in ("hres", "limits"):
        return {"hres": hres, "limits": limits}[report](w)
    return utilization(w)
