"""What the node page's load chart shows (read only): the node's indices over the
history's window, the thresholds in force drawn as lines, and the moments the load check
drained, undrained, stopped and continued, from the events it recorded.

The times are the controller's local time without an offset, as the console's tables
print them: plotly draws a date string as written.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from cluster.core.states import JobState
from cluster.models import Event
from load import history
from load.core.thresholds import INDICES
from load.models import NodeLoad, NodeLoadSample
from load.selectors import thresholds_in_force
from load.services import LOAD_REASON, SIGNER

LABELS = {
    "mem": "mem (MiB available)",
    "ut": "ut (% CPU)",
    "r15s": "r15s (run queue)",
    "r1m": "r1m (run queue)",
    "r15m": "r15m (run queue)",
}


def _when(t: datetime) -> str:
    return timezone.localtime(t).replace(tzinfo=None).isoformat(timespec="seconds")


def node_chart(name: str, *, now: datetime) -> dict[str, Any]:
    since = now - history.retention()
    rows = list(
        NodeLoadSample.objects.filter(node=name, time__gte=since)
        .order_by("time")
        .values_list("time", *history.FIELDS)
    )
    # The latest figures too, so the line reaches now between two samples.
    latest = NodeLoad.objects.filter(node=name, at__gte=since).first()
    if latest is not None and (not rows or latest.at > rows[-1][0]):
        rows.append((latest.at, *(getattr(latest, f) for f in history.FIELDS)))
    limits = thresholds_in_force([name]).get(name)
    indices = []
    for key, (word, _) in INDICES.items():
        entry: dict[str, Any] = {"key": key, "label": LABELS[key], "sched": None, "stop": None}
        if limits is not None:
            for kind, table in (("sched", limits.sched), ("stop", limits.stop)):
                if key in table:
                    entry[kind] = {"name": f"Load{kind.title()}{word}", "value": table[key]}
        indices.append(entry)
    return {
        "node": name,
        "since": _when(since),
        "until": _when(now),
        "hours": settings.FSCHED_LOAD_HISTORY_HOURS,
        "sample_interval": settings.FSCHED_LOAD_SAMPLE_INTERVAL,
        "partition": limits.partition if limits else "",
        "times": [_when(r[0]) for r in rows],
        "series": {f: [r[i + 1] for r in rows] for i, f in enumerate(history.FIELDS)},
        "indices": indices,
        "marks": _marks(name, since),
    }


def _drain_words(state: str) -> bool:
    return "DRAIN" in state.split("+")


def _marks(name: str, since: datetime) -> list[dict[str, Any]]:
    """The load check's drains and undrains of the node, and its stops and continues of the
    jobs on it (their events name the node), oldest first.  A drain is the load check's
    when its reason is the check's (``Load: ...``), an undrain when the check signed it:
    an administrator's are not marks."""
    marks = []
    events = Event.objects.filter(node=name, time__gte=since, user=SIGNER).order_by("time", "id")
    for e in events:
        if e.kind == Event.Kind.NODE:
            was, now = _drain_words(e.old_state), _drain_words(e.new_state)
            if now and not was and e.reason.startswith(LOAD_REASON):
                marks.append(_mark(e, "drain", f"drained: {e.reason}"))
            elif was and not now:
                marks.append(_mark(e, "undrain", "undrained: thresholds met"))
        elif e.kind == Event.Kind.JOB and e.new_state == JobState.STOPPED:
            marks.append(_mark(e, "stop", f"job {e.job_id} stopped: {e.reason}"))
        elif e.kind == Event.Kind.JOB and e.old_state == JobState.STOPPED and e.new_state == JobState.RUNNING:
            marks.append(_mark(e, "continue", f"job {e.job_id} continued: {e.reason}"))
    return marks


def _mark(event: Event, action: str, text: str) -> dict[str, Any]:
    figures = {k: v for k, v in (event.detail or {}).items() if k in INDICES}
    when = _when(event.time)
    return {"time": when, "action": action, "text": text, "figures": figures, "job": event.job_id}
