"""The what-if page's comparison, from simulator.report_compare's leaves: the headline
figures first (what an administrator weighs a change by), then one section per part of
the report (the summary, a partition, an account, the HRES layers, the power-state hours,
the limits hit...), each row with both values, B - A, the relative change and whether B
is better or worse. A section says how many of its figures differ, so that a page of a
few hundred figures can open only those that changed."""

from __future__ import annotations

from typing import Any

from simulator.report_compare import compare, rows

# Per user figures would make the page as long as the cluster has users; the reports'
# own pages (report.html) have them.
LEFT_OUT = frozenset({"users", "speed", "reasons", "utilisation_series"})
_SECTIONS = {
    "summary": "Whole workload",
    "partitions": "Partition {}",
    "accounts": "Account {}",
    "layers": "HRES layers",
    "power_hours": "Node hours by power state",
    "limits_hit": "Jobs held by a limit (by reason)",
    "load_stopped": "Jobs stopped by load",
    "rejected": "Jobs refused at submission",
}
# The headline: the whole workload's figures that say whether a change helps.
HEADLINE = (
    (("summary", "started"), "Jobs started", "count"),
    (("summary", "completed"), "Jobs completed", "count"),
    (("summary", "utilisation_powered"), "Utilisation of powered nodes", "share"),
    (("summary", "wait", "mean"), "Mean wait", "seconds"),
    (("summary", "wait", "p90"), "Wait, 90th percentile", "seconds"),
    (("summary", "slowdown", "mean"), "Mean slowdown", "ratio"),
    (("summary", "pending_at_end"), "Pending at the end", "count"),
    (("summary", "rejected"), "Refused at submission", "count"),
)


def _number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.1f}"


def _shown(value: Any, kind: str) -> str:
    if kind == "share" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.1%}"
    if kind == "seconds" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{_number(value)} s"
    return _number(value)


def _section(path: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    top = path[0]
    if top in ("partitions", "accounts") and len(path) > 2:
        return _SECTIONS[top].format(path[1]), path[2:]
    return _SECTIONS.get(top, top), path[1:]


def _row(leaf: dict, label: str, kind: str = "") -> dict[str, Any]:
    rel = leaf["rel"]
    return {
        "label": label,
        "a": _shown(leaf["a"], kind),
        "b": _shown(leaf["b"], kind),
        "diff": _number(leaf["diff"]) if leaf["diff"] else ("0" if leaf["diff"] == 0 else "—"),
        "rel": "—" if rel is None else f"{rel:+.1%}",
        "better": {"b": True, "a": False}.get(leaf["winner"]),
        "differs": leaf["a"] != leaf["b"],
    }


def _leaves(a: dict[str, Any], b: dict[str, Any]) -> list[dict]:
    kept_a = {k: v for k, v in a.items() if k not in LEFT_OUT}
    kept_b = {k: v for k, v in b.items() if k not in LEFT_OUT}
    return rows(compare(kept_a, kept_b))


def comparison(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """The page's ``headline`` and ``sections``, from one comparison of the reports."""
    if not a or not b:
        return {"headline": [], "sections": []}
    leaves = _leaves(a, b)
    return {"headline": _headline(leaves), "sections": _sections(leaves)}


def _sections(leaves: list[dict]) -> list[dict[str, Any]]:
    """``[{"title", "rows", "differ"}]`` in the reports' order."""
    out: list[dict[str, Any]] = []
    for leaf in leaves:
        title, figure = _section(tuple(leaf["path"]))
        if not out or out[-1]["title"] != title:
            out.append({"title": title, "rows": [], "differ": 0})
        row = _row(leaf, " ".join(figure).replace("_", " ") or title)
        out[-1]["rows"].append(row)
        out[-1]["differ"] += row["differs"]
    return out


def _headline(leaves: list[dict]) -> list[dict[str, Any]]:
    """The headline figures present in both reports, each a row as the sections' are."""
    by_path = {tuple(leaf["path"]): leaf for leaf in leaves}
    return [_row(by_path[path], label, kind) for path, label, kind in HEADLINE if path in by_path]
