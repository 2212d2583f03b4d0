"""Parsing of sbatch request fields that the controller validates (pure, no Django).

Each parser raises ValueError with the message sbatch would print after ``error:``.
"""

from __future__ import annotations

import re

MAX_ARRAY_SIZE = 1_000_001  # Slurm's MaxArraySize default is 1001; ours is larger, still bounded

_NODES_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
_ARRAY_ITEM_RE = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$")
_LICENSE_RE = re.compile(r"^([A-Za-z0-9_.\-/@]+)(?::(\d+))?$")


def parse_node_count(text: str | int) -> tuple[int, int | None]:
    """``-N 2`` → (2, None); ``-N 2-4`` → (2, 4)."""
    match = _NODES_RE.match(str(text).strip())
    if not match:
        raise ValueError(f"Invalid node count specification: {text}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) else None
    if low < 1 or (high is not None and high < low):
        raise ValueError(f"Invalid node count specification: {text}")
    return low, high


def parse_positive(text: str | int, what: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ValueError(f"Invalid {what} specification: {text}") from None
    if value < 1:
        raise ValueError(f"Invalid {what} specification: {text}")
    return value


def parse_array(text: str) -> tuple[list[int], int | None]:
    """``0-15%4`` → ([0..15], 4); ``1,3,5-9:2`` → ([1, 3, 5, 7, 9], None)."""
    spec, _, throttle_text = text.strip().partition("%")
    throttle = None
    if throttle_text:
        if not throttle_text.isdigit():
            raise ValueError(f"Invalid job array specification: {text}")
        throttle = int(throttle_text)
    tasks: set[int] = set()
    for item in spec.split(","):
        match = _ARRAY_ITEM_RE.match(item)
        if not match:
            raise ValueError(f"Invalid job array specification: {text}")
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        step = int(match.group(3)) if match.group(3) else 1
        if high < low or step < 1 or high >= MAX_ARRAY_SIZE:
            raise ValueError(f"Invalid job array specification: {text}")
        tasks.update(range(low, high + 1, step))
    return sorted(tasks), throttle


def parse_licenses(text: str) -> list[tuple[str, int]]:
    """``fluent:2,ansys`` → [("fluent", 2), ("ansys", 1)] (plain licenses; HRES extends this)."""
    out: list[tuple[str, int]] = []
    if not text.strip():
        return out
    for item in text.split(","):
        match = _LICENSE_RE.match(item.strip())
        if not match:
            raise ValueError(f"Invalid license specification: {item}")
        count = int(match.group(2)) if match.group(2) else 1
        out.append((match.group(1), count))
    return out
