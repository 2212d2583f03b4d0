"""The simulation's report (#18 point 3): the event log (simulator/records.py) read once,
line by line, into report.json and report.html (docs/simulator-report.md has every key).

Memory grows with the jobs and the nodes, never with the lines: each job keeps one small
record, each node its current state, and every quantity over time a ``StepSeries`` of a
bounded number of points.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from limits.core.reasons import ALL_REASONS as LIMIT_REASONS
from simulator.report_html import render_html
from simulator.report_nodes import NOT_POWERED, category
from simulator.report_series import StepSeries
from simulator.report_stats import GroupTally, bounded_slowdown, r

INITIAL_NODE_STATE = "IDLE"  # a node's category until its first "node" event
# The keys each kind must carry for the report (records.EVENT_KINDS has them all).
_NEEDS = {
    "meta": (),
    "submit": ("job",),
    "reject": ("job", "error"),
    "start": ("job", "cpus", "wait"),
    "end": ("job", "state", "run"),
    "reason": ("job", "reason"),
    "node": ("node", "state"),
    "layers": ("resource", "layer", "used"),
    "load": ("job", "action", "reason"),
    "done": (),
}


class ReportError(ValueError):
    """The event log cannot be read: the message names the line (or event) and the key."""


class _Job:
    __slots__ = (
        "account",
        "cpu_seconds",
        "cpus",
        "partition",
        "run",
        "start",
        "started",
        "state",
        "user",
        "wait",
    )

    def __init__(self, user: str, account: str, partition: str) -> None:
        self.user, self.account, self.partition = user, account, partition
        self.started = False
        self.start: float | None = None  # the running allocation's start, None when not running
        self.cpus = 0
        self.cpu_seconds = 0.0
        self.wait: float | None = None
        self.run: float | None = None
        self.state = ""  # the last end state


@dataclass
class _Node:
    cpus: int
    partitions: tuple[str, ...]
    state: str = INITIAL_NODE_STATE
    since: float = 0.0
    powered_seconds: float = 0.0


class ReportBuilder:
    """Fed the events in log order (``feed``), then asked for the report (``report``)."""

    def __init__(self) -> None:
        self.meta: dict = {}
        self.done: dict = {}
        self.t = 0.0
        self.jobs: dict[str, _Job] = {}
        self.nodes: dict[str, _Node] = {}
        self.partitions: dict[str, list[str]] = {}
        self.power_seconds: dict[str, float] = {}
        self.allocated = StepSeries()
        self.powered = StepSeries()
        self.layers: dict[tuple[str, str], StepSeries] = {}
        self.layer_counts: dict[tuple[str, str], float] = {}
        self.reasons: dict[str, set[str]] = {}
        self.rejected: dict[str, int] = {}
        self.load_actions: dict[str, int] = {}
        self.load_reasons: dict[str, set[str]] = {}
        self.load_jobs: set[str] = set()
        self.ignored = 0

    # Reading ------------------------------------------------------------------------

    def feed(self, event: dict, where: str) -> None:
        if not isinstance(event, dict):
            raise ReportError(f"{where}: an event must be a JSON object, not {type(event).__name__}")
        kind = event.get("event")
        if kind not in _NEEDS:
            self.ignored += 1  # a kind a later engine may add: not the report's to refuse
            return
        missing = [k for k in ("t", *_NEEDS[kind]) if k not in event]
        if missing:
            raise ReportError(f"{where}: {kind} event without {', '.join(repr(k) for k in missing)}")
        try:
            t = float(event["t"])
        except (TypeError, ValueError):
            raise ReportError(f"{where}: {kind} event: t={event['t']!r} is not a number") from None
        # The engine writes in time order; a step back would be float noise, not news.
        self.t = max(self.t, t)
        try:
            getattr(self, f"_on_{kind}")(event)
        except KeyError as exc:
            raise ReportError(f"{where}: {kind} event: no {exc} key") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"{where}: {kind} event: {exc}") from None

    def _on_meta(self, e: dict) -> None:
        self.meta = e
        for node in e.get("nodes") or []:
            cpus, partitions = int(node.get("cpus") or 0), tuple(node.get("partitions") or ())
            self.nodes[str(node["name"])] = _Node(cpus, partitions)
        parts = e.get("partitions") or {}
        if parts:
            self.partitions = {str(p): [str(n) for n in names] for p, names in parts.items()}
        else:
            for name, node in self.nodes.items():
                for p in node.partitions:
                    self.partitions.setdefault(p, []).append(name)
        # Every node starts IDLE, powered up, until its first "node" event.
        self.powered.set(0.0, sum(n.cpus for n in self.nodes.values()))
        for resource, layers in (e.get("resources") or {}).items():
            for layer, count in (layers or {}).items():
                self._layer(str(resource), str(layer)).set(0.0, 0)
                self.layer_counts[(str(resource), str(layer))] = float(count)

    def _on_submit(self, e: dict) -> None:
        self.jobs[str(e["job"])] = _new_job(e)

    def _job(self, e: dict) -> _Job:
        key = str(e["job"])
        job = self.jobs.get(key)
        if job is None:  # a job the log never showed submitted: known from this line on
            job = self.jobs[key] = _new_job(e)
        return job

    def _on_reject(self, e: dict) -> None:
        error = str(e["error"])
        self.rejected[error] = self.rejected.get(error, 0) + 1

    def _on_start(self, e: dict) -> None:
        job = self._job(e)
        # The partition and account it runs under (a job submitted to several partitions
        # runs in one).
        for attr in ("user", "account", "partition"):
            if e.get(attr) is not None:
                setattr(job, attr, _name(e[attr]))
        if job.start is not None:  # started twice without an end: close the first run
            self._release(job)
        if not job.started:
            job.started = True
            job.wait = float(e["wait"])
        job.start, job.cpus = self.t, int(e["cpus"])
        self.allocated.add(self.t, job.cpus)

    def _release(self, job: _Job) -> None:
        if job.start is not None:
            job.cpu_seconds += job.cpus * (self.t - job.start)
            self.allocated.add(self.t, -job.cpus)
            job.start = None

    def _on_end(self, e: dict) -> None:
        job = self._job(e)
        self._release(job)
        job.state = str(e["state"])
        job.run = float(e["run"])

    def _on_reason(self, e: dict) -> None:
        self.reasons.setdefault(str(e["reason"]), set()).add(str(e["job"]))

    def _on_node(self, e: dict) -> None:
        name = str(e["node"])
        node = self.nodes.get(name)
        if node is None:  # not in the meta line: its hours count, its CPUs are unknown
            node = self.nodes[name] = _Node(0, ())
        self._close_node(node)
        was_powered = node.state not in NOT_POWERED
        node.state = category(str(e["state"]))
        now_powered = node.state not in NOT_POWERED
        if was_powered != now_powered:
            self.powered.add(self.t, node.cpus if now_powered else -node.cpus)

    def _close_node(self, node: _Node) -> None:
        spent = self.t - node.since
        self.power_seconds[node.state] = self.power_seconds.get(node.state, 0.0) + spent
        if node.state not in NOT_POWERED:
            node.powered_seconds += spent
        node.since = self.t

    def _layer(self, resource: str, layer: str) -> StepSeries:
        series = self.layers.get((resource, layer))
        if series is None:
            series = self.layers[(resource, layer)] = StepSeries()
        return series

    def _on_layers(self, e: dict) -> None:
        key = (str(e["resource"]), str(e["layer"]))
        self._layer(*key).set(self.t, float(e["used"]))
        if e.get("count") is not None:
            self.layer_counts[key] = float(e["count"])

    def _on_load(self, e: dict) -> None:
        job, action, reason = str(e["job"]), str(e["action"]), str(e["reason"])
        self.load_actions[action] = self.load_actions.get(action, 0) + 1
        self.load_reasons.setdefault(reason, set()).add(job)
        self.load_jobs.add(job)

    def _on_done(self, e: dict) -> None:
        self.done = e

    # The report -----------------------------------------------------------------------

    def report(self) -> dict:
        span = max(self.t, float(self.done.get("simulated_seconds") or 0.0))
        self.t = span
        for job in self.jobs.values():
            running = job.start is not None
            self._release(job)
            job.start = self.t if running else None  # still running: counted below
        for node in self.nodes.values():
            self._close_node(node)
        all_cpu_s = sum(n.cpus for n in self.nodes.values()) * span
        powered_cpu_s = sum(n.cpus * n.powered_seconds for n in self.nodes.values())

        total = GroupTally()
        parts: dict[str, GroupTally] = {p: GroupTally() for p in self.partitions}
        accounts: dict[str, GroupTally] = {}
        users: dict[str, GroupTally] = {}
        for job in self.jobs.values():
            for tally in (
                total,
                parts.setdefault(job.partition, GroupTally()),
                accounts.setdefault(job.account, GroupTally()),
                users.setdefault(job.user, GroupTally()),
            ):
                _count(tally, job)

        def part_cpu_s(name: str) -> tuple[float, float]:
            nodes = [self.nodes[n] for n in self.partitions.get(name, ()) if n in self.nodes]
            return sum(n.cpus for n in nodes) * span, sum(n.cpus * n.powered_seconds for n in nodes)

        def figures(tally: GroupTally, cpu_s: tuple[float, float] = (all_cpu_s, powered_cpu_s)) -> dict:
            return tally.figures(available_all=cpu_s[0], available_powered=cpu_s[1])

        summary = figures(total)
        summary.update(
            nodes=len(self.nodes),
            cpus=sum(n.cpus for n in self.nodes.values()),
            simulated_seconds=r(span),
            rejected=sum(self.rejected.values()),
        )
        wall = self.done.get("wall_seconds")
        done_jobs = self.done.get("jobs", len(self.jobs))
        return {
            "meta": {
                "start_epoch": self.meta.get("start_epoch"),
                "conf": _text(self.meta.get("conf")),
                "workload": _text(self.meta.get("workload")),
                "ignored_events": self.ignored,
            },
            "summary": summary,
            "partitions": {p: figures(t, part_cpu_s(p)) for p, t in sorted(parts.items())},
            "accounts": {a: figures(t) for a, t in sorted(accounts.items())},
            "users": {u: figures(t) for u, t in sorted(users.items())},
            "utilisation_series": {
                "total_cpus": summary["cpus"],
                "allocated_cpus": self.allocated.points(span),
                "powered_cpus": self.powered.points(span),
            },
            "layers": self._layers_report(span),
            "power_hours": {s: r(sec / 3600) for s, sec in sorted(self.power_seconds.items())},
            "limits_hit": {k: len(v) for k, v in sorted(self.reasons.items()) if k in LIMIT_REASONS},
            "reasons": {k: len(v) for k, v in sorted(self.reasons.items())},
            "load_stopped": {
                "jobs": len(self.load_jobs),
                "actions": dict(sorted(self.load_actions.items())),
                "reasons": {k: len(v) for k, v in sorted(self.load_reasons.items())},
            },
            "rejected": dict(sorted(self.rejected.items())),
            "speed": {
                "simulated_seconds": r(span),
                "wall_seconds": r(float(wall)) if wall is not None else None,
                "ratio": r(span / float(wall)) if wall else None,
                "jobs_per_s": r(float(done_jobs) / float(wall)) if wall else None,
            },
        }

    def _layers_report(self, span: float) -> dict:
        out: dict[str, dict[str, dict]] = {}
        for (resource, layer), series in sorted(self.layers.items()):
            count = self.layer_counts.get((resource, layer))
            out.setdefault(resource, {})[layer] = {
                "count": r(count) if count is not None else None,
                "peak": r(series.peak),
                "mean": series.mean(span),
                "series": series.points(span),
            }
        return out


def _name(value: object) -> str:
    return sys.intern(str(value)) if value is not None else ""


def _new_job(e: dict) -> _Job:
    return _Job(_name(e.get("user")), _name(e.get("account")), _name(e.get("partition")))


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _count(tally: GroupTally, job: _Job) -> None:
    tally.jobs += 1
    tally.cpu_seconds += job.cpu_seconds
    if job.state:
        tally.end_states[job.state] = tally.end_states.get(job.state, 0) + 1
    if job.start is not None:
        tally.running_at_end += 1
    elif not job.started and not job.state:
        tally.pending_at_end += 1
    if job.started and job.wait is not None:
        tally.started += 1
        tally.waits.append(job.wait)
        if job.run is not None:
            tally.slowdowns.append(bounded_slowdown(job.wait, job.run))


def build_report(events: Iterable[dict]) -> dict:
    """The report of a log given as its events, in order (see docs/simulator-report.md)."""
    builder = ReportBuilder()
    for i, event in enumerate(events, 1):
        builder.feed(event, f"event {i}")
    return builder.report()


def read_events(path: Path) -> Iterator[tuple[dict, str]]:
    """The log's events, one line at a time, each with where it was read."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                yield json.loads(line), where
            except json.JSONDecodeError as exc:
                raise ReportError(f"{where}: not a JSON line: {exc.msg} (column {exc.colno})") from None


def write_report(events_path: Path | str, out_dir: Path | str) -> tuple[Path, Path]:
    """Read the log at ``events_path`` and write ``report.json`` and ``report.html`` in
    ``out_dir`` (made if missing); returns their paths."""
    events_path, out_dir = Path(events_path), Path(out_dir)
    builder = ReportBuilder()
    for event, where in read_events(events_path):
        builder.feed(event, where)
    report = builder.report()
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out_dir / "report.json", out_dir / "report.html"
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    html_path.write_text(render_html(report), encoding="utf-8")
    return json_path, html_path
