"""The console's reports as tables: one table per report (the rows the page shows and the
export downloads, CSV, JSON or XLSX, through cluster.exports), and the data of its charts.

Figures are hours (node-, CPU-, billing-, GPU-hours; memory in GB-hours) to two decimals.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Sum

from reports import selectors
from reports.core.rollup import DURATION_LABELS
from reports.models import JobUsage

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
}


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


def build(report: str, w: selectors.Window, *, accounts: Sequence[str], users: Sequence[str]) -> Table:
    if report == "usage":
        return usage(w, accounts=accounts, users=users)
    if report == "jobs":
        return jobs(w, accounts=accounts, users=users)
    if report == "power":
        return power(w)
    return utilization(w)
