"""How many names a hostlist expression stands for, counted without expanding it.

ClusterShell's ``NodeSet`` keeps one entry per index, so even ``len(NodeSet("n[1-99999999]"))``
builds a hundred million of them (about 80 s and several GB).  Anything that takes a
hostlist from a file or a request asks :func:`hostlist_size` first and refuses what is too
large.  Pure: no Django, no clock.
"""

from __future__ import annotations

import re

# A count this large is "too many" for every caller; past it no arithmetic is done.
HUGE = 10**18

_RANGE_RE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*(?:/\s*(\d+)\s*)?)?")
_OPERATORS = frozenset(",!&^")


def hostlist_size(expr: str) -> int:
    """An upper bound of the number of names ``expr`` expands to (exact without ``!&^``).

    Comma-separated parts add up, bracket groups in one name multiply (``r[1-2]n[1-4]``
    is 8).  The operators ``!``, ``&`` and ``^`` of ClusterShell only remove names, so
    their right-hand sides are added too: the bound stays an upper bound.  A malformed
    expression counts what it can; the parser that expands it refuses it afterwards.
    """
    total = 0
    term = 1
    depth = 0
    group: list[str] = []
    for ch in expr:
        if depth:
            if ch == "]":
                depth = 0
                term = min(HUGE, term * _group_size("".join(group)))
                group = []
            else:
                group.append(ch)
        elif ch == "[":
            depth = 1
        elif ch in _OPERATORS:
            total = min(HUGE, total + term)
            term = 1
    if depth:  # an unclosed bracket still counts its ranges: "n[1-99999999" is no smaller
        term = min(HUGE, term * _group_size("".join(group)))
    return min(HUGE, total + term)


def _group_size(text: str) -> int:
    size = 0
    for item in text.split(","):
        m = _RANGE_RE.fullmatch(item)
        if m is None:
            size += 1
            continue
        first, last, step = m.groups()
        if last is None:
            size += 1
            continue
        if max(len(first), len(last), len(step or "")) > 18:
            return HUGE
        low, high = int(first), int(last)
        size += max(0, (high - low) // int(step or 1) + 1) if int(step or 1) else 1
        if size >= HUGE:
            return HUGE
    return size
