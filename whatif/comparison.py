"""The rows of the what-if page's comparison table, from simulator.report_compare's
leaves: a heading row where the section changes (the summary, a partition, an account,
the HRES layers, the power-state hours, the limits hit...), then a row per figure with
both values, B - A, the relative change and whether B is better or worse."""

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


def _number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.1f}"


def _section(path: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    top = path[0]
    if top in ("partitions", "accounts") and len(path) > 2:
        return _SECTIONS[top].format(path[1]), path[2:]
    return _SECTIONS.get(top, top), path[1:]


def comparison_rows(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not a or not b:
        return []
    out: list[dict[str, Any]] = []
    heading = None
    kept_a = {k: v for k, v in a.items() if k not in LEFT_OUT}
    kept_b = {k: v for k, v in b.items() if k not in LEFT_OUT}
    for leaf in rows(compare(kept_a, kept_b)):
        section, figure = _section(tuple(leaf["path"]))
        if section != heading:
            heading = section
            out.append({"heading": section})
        rel = leaf["rel"]
        out.append(
            {
                "label": " ".join(figure).replace("_", " ") or section,
                "a": _number(leaf["a"]),
                "b": _number(leaf["b"]),
                "diff": _number(leaf["diff"]) if leaf["diff"] else ("0" if leaf["diff"] == 0 else "—"),
                "rel": "—" if rel is None else f"{rel:+.1%}",
                "better": {"b": True, "a": False}.get(leaf["winner"]),
            }
        )
    return out
