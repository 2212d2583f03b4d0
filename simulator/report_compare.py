"""Two simulation reports side by side (#18 point 4's what-if): every numeric leaf of
either report with both values, their difference, the relative change and which way is
better for that figure, so that a page can highlight what changed for the better or worse.

``compare(a, b)`` mirrors the reports' nesting: where a report has a number (or has none
and the other has), the result has ``{"a", "b", "diff", "rel", "better", "winner"}``:

- ``diff`` = b - a and ``rel`` = (b - a) / |a| (``None`` when a side is missing or null,
  ``rel`` also when a is 0 and b is not; 0 when both are 0);
- ``better``: ``"lower"``, ``"higher"`` or ``None`` when neither way is better (the
  workload's size, a configured count, how often a limit held: a policy, not a fault);
- ``winner``: ``"a"``, ``"b"``, ``"same"``, or ``None`` when ``better`` is None or a side is
  missing.

Lists (the series over time) are not compared: their points fall on different times in
two runs.  ``meta`` (the file names) is left out.
"""

from __future__ import annotations

from collections.abc import Sequence

SKIPPED = frozenset({"meta"})

# Figures of a group of jobs, by their own key.
_LOWER = frozenset({"timeout", "failed", "running_at_end", "pending_at_end", "rejected", "wall_seconds"})
_HIGHER = frozenset({"started", "completed", "utilisation_all", "utilisation_powered", "ratio", "jobs_per_s"})
# Node-hours by state: powered-down hours save power, idle powered-up or unusable ones waste it.
_POWER_LOWER = frozenset({"IDLE", "POWERING_UP", "POWERING_DOWN", "DOWN", "DRAINED", "DRAINING", "REBOOT"})
_POWER_HIGHER = frozenset({"POWERED_DOWN"})


def better(path: Sequence[str]) -> str | None:
    """Which way is better for the figure at ``path`` (the keys from the report's top)."""
    top, key = path[0], path[-1]
    if top in ("rejected", "load_stopped"):
        return "lower"
    if top == "power_hours":
        return "lower" if key in _POWER_LOWER else "higher" if key in _POWER_HIGHER else None
    if top == "layers":
        return "higher" if key == "mean" else None  # more of a resource's layers put to use
    if top == "speed":
        return "lower" if key in _LOWER else "higher" if key in _HIGHER else None
    # A group's figures: under "summary" directly, under a name in the others (a name may
    # be any text, "wait" too, so it is skipped by position, never looked at).
    if top == "summary":
        figure = path[1:]
    elif top in ("partitions", "accounts", "users"):
        figure = path[2:]
    else:  # limits_hit, reasons, utilisation_series' total: a policy or a size
        return None
    if not figure or figure[0] in ("end_states", "wait_histogram"):
        return None
    if figure[0] in ("wait", "slowdown"):
        return "lower"
    return "lower" if figure[0] in _LOWER else "higher" if figure[0] in _HIGHER else None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _leaf(a: object, b: object, path: tuple[str, ...]) -> dict:
    fa = float(a) if isinstance(a, int | float) and _number(a) else None
    fb = float(b) if isinstance(b, int | float) and _number(b) else None
    diff = rel = winner = None
    way = better(path)
    if fa is not None and fb is not None:
        diff = fb - fa
        rel = 0.0 if diff == 0 else (diff / abs(fa) if fa != 0 else None)
        if way is not None:
            winner = "same" if diff == 0 else "b" if (diff < 0) == (way == "lower") else "a"
    return {"a": a, "b": b, "diff": diff, "rel": rel, "better": way, "winner": winner}


def _walk(a: object, b: object, path: tuple[str, ...]) -> dict | None:
    if isinstance(a, dict) or isinstance(b, dict):
        da = a if isinstance(a, dict) else {}
        db = b if isinstance(b, dict) else {}
        out = {}
        for key in [*da, *(k for k in db if k not in da)]:
            if not path and key in SKIPPED:
                continue
            sub = _walk(da.get(key), db.get(key), (*path, str(key)))
            if sub is not None:
                out[key] = sub
        return out
    if _number(a) or _number(b):
        return _leaf(a, b, path)
    return None


def compare(a: dict, b: dict) -> dict:
    """The two reports' numeric leaves side by side (see the module's docstring)."""
    return _walk(a, b, ()) or {}


def rows(comparison: dict) -> list[dict]:
    """``compare()``'s leaves in the reports' order, each with its ``path`` (the keys from
    the top), for a page that lists them as a table."""
    out: list[dict] = []

    def walk(node: dict, path: tuple[str, ...]) -> None:
        # A leaf holds no dict; a group may be named "a" or "diff" and still holds dicts.
        if node and not any(isinstance(v, dict) for v in node.values()):
            out.append({"path": path, **node})
            return
        for key, sub in node.items():
            walk(sub, (*path, str(key)))

    walk(comparison, ())
    return out
