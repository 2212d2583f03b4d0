"""report.html: one self-contained page of a simulation's report, plotly charts and tables.

It works offline and fetches nothing: plotly.js is the installed ``plotly`` package's
``plotly.min.js``, inlined.  Every name the log brings (users, accounts, partitions,
layers, reasons, errors) may hold any text, so: table cells go through ``html.escape``;
chart labels are escaped the same way before plotly gets them (plotly reads a few HTML
tags in labels and decodes entities back to text, so the reader sees the name as
written and no tag of it is ever interpreted); and the charts' data travel as JSON in a
``<script type="application/json">`` block with ``<``, ``>`` and ``&`` written as
``\\u003c``, ``\\u003e``, ``\\u0026``, so that no ``</script>`` of a name can close it.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from pathlib import Path

import plotly

from simulator.report_stats import HISTOGRAM_LABELS

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
TOP_USERS = 50  # the users' table: the users with the most CPU-hours
HOUR = 3600.0


@lru_cache(maxsize=1)
def plotly_bundle() -> str:
    text = PLOTLY_JS.read_text(encoding="utf-8")
    if "</script" in text.lower():  # it would end the inline <script>: never seen, but checked
        raise RuntimeError(f"{PLOTLY_JS} holds '</script' and cannot be inlined")
    return text


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def script_json(data: object) -> str:
    """JSON that is safe inside a <script> element."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    for char, code in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, code)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return esc(value)


# Charts ----------------------------------------------------------------------------------


def _layout(title: str, x: str, y: str, **extra: object) -> dict:
    return {
        "title": {"text": title},
        "xaxis": {"title": {"text": x}, "automargin": True},
        "yaxis": {"title": {"text": y}, "automargin": True, "rangemode": "tozero"},
        "margin": {"t": 50, "r": 20},
        "legend": {"orientation": "h"},
        **extra,
    }


def _step(points: list[list[float]], name: str, span: float) -> dict:
    xs = [p[0] / HOUR for p in points]
    ys = [p[1] for p in points]
    if points and span > points[-1][0]:  # the last value holds to the end
        xs.append(span / HOUR)
        ys.append(points[-1][1])
    return {"type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "name": esc(name), "x": xs, "y": ys}


def _bars(labels: list[str], values: list, name: str = "") -> dict:
    return {"type": "bar", "name": esc(name), "x": [esc(v) for v in labels], "y": values}


def _histograms(groups: dict[str, dict]) -> list[dict]:
    labels = [f"{label} s" for label in HISTOGRAM_LABELS]
    return [
        _bars(labels, [g["wait_histogram"][label] for label in HISTOGRAM_LABELS], name)
        for name, g in groups.items()
    ]


def charts(report: dict) -> dict[str, dict]:
    """The charts' plotly figures, by the id of the element each is drawn in."""
    span = float(report["summary"]["simulated_seconds"] or 0.0)
    util = report["utilisation_series"]
    total = util["total_cpus"]
    layers = [
        _step(layer["series"], f"{resource}: {name} (count {fmt(layer['count'])})", span)
        for resource, by_layer in report["layers"].items()
        for name, layer in by_layer.items()
    ]
    parts = report["partitions"]
    slowdown = [
        _bars(list(parts), [g["slowdown"][k] for g in parts.values()], k) for k in ("mean", "median", "p90")
    ]
    load = report["load_stopped"]
    return {
        "chart-utilisation": {
            "data": [
                _step(util["allocated_cpus"], "allocated CPUs", span),
                _step(util["powered_cpus"], "powered-up CPUs", span),
                _step([[0.0, total]], "all CPUs", span),
            ],
            "layout": _layout("CPUs over time", "hours since the start", "CPUs"),
        },
        "chart-wait-partitions": {
            "data": _histograms(parts),
            "layout": _layout("Wait per partition", "wait", "jobs", barmode="group"),
        },
        "chart-wait-accounts": {
            "data": _histograms(report["accounts"]),
            "layout": _layout("Wait per account", "wait", "jobs", barmode="group"),
        },
        "chart-slowdown": {
            "data": slowdown,
            "layout": _layout("Bounded slowdown per partition", "partition", "slowdown", barmode="group"),
        },
        "chart-layers": {
            "data": layers,
            "layout": _layout("HRES layers in use", "hours since the start", "used"),
        },
        "chart-power": {
            "data": [_bars(list(report["power_hours"]), list(report["power_hours"].values()), "node-hours")],
            "layout": _layout("Node hours by state", "state", "node-hours"),
        },
        "chart-limits": {
            "data": [_bars(list(report["limits_hit"]), list(report["limits_hit"].values()), "jobs")],
            "layout": _layout("Jobs held by a limit, by reason", "reason", "jobs"),
        },
        "chart-load": {
            "data": [
                _bars(list(load["reasons"]), list(load["reasons"].values()), "jobs, by reason"),
                _bars(list(load["actions"]), list(load["actions"].values()), "events, by action"),
            ],
            "layout": _layout("Jobs stopped by load", "reason or action", "count"),
        },
    }


# Tables ----------------------------------------------------------------------------------

_GROUP_COLUMNS = (
    ("jobs", "jobs"),
    ("started", "started"),
    ("completed", "completed"),
    ("timeout", "timeout"),
    ("failed", "failed"),
    ("cpu_hours", "CPU-hours"),
    ("utilisation_all", "utilisation (all nodes)"),
    ("utilisation_powered", "utilisation (powered-up nodes)"),
    ("wait.mean", "wait mean (s)"),
    ("wait.median", "wait median (s)"),
    ("wait.p90", "wait p90 (s)"),
    ("wait.p99", "wait p99 (s)"),
    ("wait.max", "wait max (s)"),
    ("slowdown.mean", "slowdown mean"),
    ("slowdown.median", "slowdown median"),
    ("slowdown.p90", "slowdown p90"),
)


def _get(figures: dict, key: str) -> object:
    value: object = figures
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _group_table(title: str, groups: dict[str, dict], table_id: str) -> str:
    head = "".join(f"<th scope='col'>{esc(label)}</th>" for _, label in _GROUP_COLUMNS)
    rows = "".join(
        f"<tr><th scope='row'>{esc(name)}</th>"
        + "".join(f"<td>{fmt(_get(g, key))}</td>" for key, _ in _GROUP_COLUMNS)
        + "</tr>"
        for name, g in groups.items()
    )
    return (
        f"<table id='{table_id}'><caption>{esc(title)}</caption>"
        f"<thead><tr><th scope='col'>name</th>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _summary_table(report: dict) -> str:
    s, speed = report["summary"], report["speed"]
    rows = [
        ("nodes", s["nodes"]),
        ("CPUs", s["cpus"]),
        ("simulated span (s)", s["simulated_seconds"]),
        ("rejected at submission", s["rejected"]),
        ("running at the end", s["running_at_end"]),
        ("never started, pending at the end", s["pending_at_end"]),
        *((label, _get(s, key)) for key, label in _GROUP_COLUMNS),
        ("wall time (s)", speed["wall_seconds"]),
        ("simulated s per wall s", speed["ratio"]),
        ("jobs per wall s", speed["jobs_per_s"]),
    ]
    body = "".join(f"<tr><th scope='row'>{esc(k)}</th><td>{fmt(v)}</td></tr>" for k, v in rows)
    return f"<table id='summary'><caption>Summary</caption><tbody>{body}</tbody></table>"


def _counts_table(title: str, counts: dict[str, int], what: str, table_id: str) -> str:
    body = "".join(f"<tr><th scope='row'>{esc(k)}</th><td>{fmt(v)}</td></tr>" for k, v in counts.items())
    if not body:
        body = "<tr><td colspan='2'>none</td></tr>"
    return (
        f"<table id='{table_id}'><caption>{esc(title)}</caption>"
        f"<thead><tr><th scope='col'>{esc(what)}</th><th scope='col'>count</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1b1b1b; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; }
th, td { border: 1px solid #c8c8c8; padding: 0.2rem 0.5rem; text-align: right; }
th[scope=row] { text-align: left; }
.chart { min-height: 420px; margin: 1rem 0; }
.scroll { overflow-x: auto; }
"""

_DRAW = """
(function () {
  var figures = JSON.parse(document.getElementById("report-data").textContent);
  Object.keys(figures).forEach(function (id) {
    var f = figures[id];
    if (!f.data.length || f.data.every(function (t) { return !t.x.length; })) {
      f.layout.annotations = [{text: "none", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5}];
    }
    Plotly.newPlot(id, f.data, f.layout, {displaylogo: false, responsive: true});
  });
})();
"""


def render_html(report: dict) -> str:
    meta = report["meta"]
    users = dict(
        sorted(report["users"].items(), key=lambda kv: -(kv[1]["cpu_hours"] or 0.0))[:TOP_USERS]
    )
    sections = [
        _summary_table(report),
        *(
            f"<section><h2>{esc(title)}</h2><div class='chart' id='{chart_id}'></div></section>"
            for chart_id, title in (
                ("chart-utilisation", "Utilisation over time"),
                ("chart-wait-partitions", "Waits per partition"),
                ("chart-wait-accounts", "Waits per account"),
                ("chart-slowdown", "Slowdown"),
                ("chart-layers", "HRES layers"),
                ("chart-power", "Node power states"),
                ("chart-limits", "Limits hit"),
                ("chart-load", "Load stops"),
            )
        ),
        "<div class='scroll'>" + _group_table("Partitions", report["partitions"], "partitions") + "</div>",
        "<div class='scroll'>" + _group_table("Accounts", report["accounts"], "accounts") + "</div>",
        "<div class='scroll'>"
        + _group_table(f"Users (the {TOP_USERS} with the most CPU-hours)", users, "users")
        + "</div>",
        _counts_table("Rejected at submission", report["rejected"], "error", "rejected"),
        _counts_table("Pending reasons (jobs)", report["reasons"], "reason", "reasons"),
    ]
    named = (("conf", "configuration"), ("workload", "workload"))
    source = " · ".join(f"{esc(label)}: {esc(meta[key])}" for key, label in named if meta.get(key))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<title>fsched simulation report</title>"
        f"<style>{_STYLE}</style>"
        f"<script>{plotly_bundle()}</script>"
        "</head><body><main>"
        f"<h1>Simulation report</h1><p>{source}</p>"
        + "\n".join(sections)
        + "</main>"
        f"<script type='application/json' id='report-data'>{script_json(charts(report))}</script>"
        f"<script>{_DRAW}</script>"
        "</body></html>\n"
    )
