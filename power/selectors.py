"""What the console's Power page shows, read from the ORM (no writes).

* the power state of every node now, and per node over a window of time (from the node
  events the services record), for the per-node timeline;
* the number of nodes in each power state over that window, for the cluster chart;
* the latest program runs (when, which nodes, exit code, duration, why a resume failed).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from cluster.core import states
from cluster.models import Event, Node
from power.models import PowerRun

# Power categories, in the order the chart stacks them.
CATEGORIES = ("up", "powering_up", "powering_down", "powered_down")
LABELS = {
    "up": "powered up",
    "powering_up": "powering up (#)",
    "powering_down": "powering down (%)",
    "powered_down": "powered down (~)",
}
COLOURS = {"up": "#3a9d5d", "powering_up": "#f0a830", "powering_down": "#8e6cc9", "powered_down": "#9aa5b1"}
SUFFIXES = (
    ("~", "powered down (POWERED_DOWN)"),
    ("#", "powering up (POWERING_UP)"),
    ("%", "powering down (POWERING_DOWN): unusable for SuspendTimeout"),
    ("!", "power down requested (POWER_DOWN)"),
)


def category(state: str) -> str:
    """A long node state (``IDLE+CLOUD+POWERED_DOWN``) as one power category."""
    words = set(state.upper().split("+"))
    if "POWERING_UP" in words:
        return "powering_up"
    if "POWERING_DOWN" in words:
        return "powering_down"
    if "POWERED_DOWN" in words:
        return "powered_down"
    return "up"


@dataclass(frozen=True)
class Segment:
    node: str
    category: str
    start: datetime
    end: datetime


def controller_start() -> datetime | None:
    """When the controller first started on this state: its first configuration load (the
    oldest CONFIG event).  Before it, no state was recorded, so none is drawn."""
    return (
        Event.objects.filter(kind=Event.Kind.CONFIG)
        .order_by("time", "id")
        .values_list("time", flat=True)
        .first()
    )


def power_history(now: datetime, window: timedelta = timedelta(hours=1)) -> dict:
    """The chart and timeline data for ``[now - window, now]``, as plotly wants it; from the
    controller's start where that is later."""
    start = now - window
    started = controller_start()
    if started is not None and start < started <= now:
        start = started
    current = {name: category(states.long_state(base, flags)) for name, base, flags in
               Node.objects.values_list("name", "base_state", "flags")}  # fmt: skip
    events = [
        (t, node, category(old), category(new))
        for t, node, old, new in Event.objects.filter(kind=Event.Kind.NODE, time__gte=start, time__lte=now)
        .exclude(old_state="")
        .order_by("time", "id")
        .values_list("time", "node", "old_state", "new_state")
        if node in current and category(old) != category(new)
    ]
    # The counts over time: start from now and undo the changes, newest first.
    counts = Counter(current.values())
    times: list[datetime] = [now]
    series: list[Counter] = [Counter(counts)]
    for t, _node, old, new in reversed(events):
        times.append(t)  # the counts from this change on
        series.append(Counter(counts))
        counts[new] -= 1
        counts[old] += 1
    times.append(start)
    series.append(Counter(counts))
    times.reverse()
    series.reverse()
    # Each node's segments (only nodes that were ever not simply powered up).
    first: dict[str, str] = {}
    for _t, node, old, _new in events:
        first.setdefault(node, old)
    segments: list[Segment] = []
    for name in sorted(current):
        mine = [(t, new) for t, node, _old, new in events if node == name]
        cat = first.get(name, current[name])
        if not mine and cat == "up":
            continue
        at = start
        for t, new in mine:
            segments.append(Segment(name, cat, at, t))
            at, cat = t, new
        segments.append(Segment(name, cat, at, now))
    return {
        "chart": {
            "times": [t.isoformat() for t in times],
            "series": {c: [s.get(c, 0) for s in series] for c in CATEGORIES},
        },
        "timeline": [
            {
                "node": s.node,
                "category": s.category,
                "start": s.start.isoformat(),
                "ms": max(1.0, (s.end - s.start).total_seconds() * 1000),
            }
            for s in segments
        ],
        "since": start.isoformat(),
        "labels": LABELS,
        "colours": COLOURS,
        "counts": {c: Counter(current.values()).get(c, 0) for c in CATEGORIES},
    }


def power_page(now: datetime, *, runs: int = 50) -> dict:
    history = power_history(now)
    return {
        "history_json": json.dumps(history),
        "since": history["since"],
        # The page's words for it, as the console writes times (the datetime attribute keeps ISO).
        "since_at": datetime.fromisoformat(history["since"]),
        "counts": [(LABELS[c], history["counts"][c], c, COLOURS[c]) for c in CATEGORIES],
        "runs": list(PowerRun.objects.all()[:runs]),
        "suffixes": SUFFIXES,
        "colours": COLOURS,
    }
