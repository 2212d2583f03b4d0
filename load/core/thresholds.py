"""Per-partition load thresholds from ``PartitionName`` lines (fsched's own, not Slurm's).

``LoadSched<X>``/``LoadStop<X>`` for X in Mem (integer MiB), Ut (integer %), R15s, R1m and
R15m (plain decimals).  A value is a plain number: a unit is an error.  A ``LoadStop``
needs its ``LoadSched``, and must lie beyond it (``LoadStopMem`` below ``LoadSchedMem``,
every other stop above its sched).  A node in several partitions takes the thresholds
of the last partition that lists it.  Pure: the partitions' raw keys in, problems out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# index -> (the word in the key, integer only?)
INDICES: dict[str, tuple[str, bool]] = {
    "mem": ("Mem", True),
    "ut": ("Ut", True),
    "r15s": ("R15s", False),
    "r1m": ("R1m", False),
    "r15m": ("R15m", False),
}
KEYS = tuple(f"Load{kind}{word}" for word, _ in INDICES.values() for kind in ("Sched", "Stop"))
_INTEGER = re.compile(r"\d+")
_DECIMAL = re.compile(r"(\d+(\.\d*)?|\.\d+)")
_BIG = 10**9  # beyond any node's MiB or run queue: a typo, not a threshold


def lower_is_worse(index: str) -> bool:
    """Memory is short when it falls below its threshold; the other indices when they rise above."""
    return index == "mem"


@dataclass(frozen=True)
class Thresholds:
    """The thresholds in force on a node: index -> value, for those set."""

    sched: Mapping[str, float]
    stop: Mapping[str, float]
    partition: str = ""

    def __bool__(self) -> bool:
        return bool(self.sched)

    def keys(self) -> list[tuple[str, float]]:
        """``LoadSchedMem=1300,LoadStopMem=1200,...`` in the documented order, those set."""
        out = []
        for index, (word, integer) in INDICES.items():
            for kind, table in (("Sched", self.sched), ("Stop", self.stop)):
                if index in table:
                    out.append((f"Load{kind}{word}", int(table[index]) if integer else table[index]))
        return out


def _number(key: str, value: str, integer: bool) -> float:
    text = value.strip()
    if not (_INTEGER if integer else _DECIMAL).fullmatch(text):
        kind = "an integer" if integer else "a number"
        unit = " (no unit may be written)" if re.fullmatch(r"[\d.]+\s*[A-Za-z%]+", text) else ""
        raise ValueError(f"{key}={value}: must be {kind}{unit}")
    number = float(text)
    if number > _BIG:
        raise ValueError(f"{key}={value}: out of range")
    return number


def parse(extra: Mapping[str, str]) -> Thresholds:
    """One partition's thresholds from its raw keys; ``ValueError`` lists every problem."""
    sched: dict[str, float] = {}
    stop: dict[str, float] = {}
    problems: list[str] = []
    for index, (word, integer) in INDICES.items():
        for kind, table in (("Sched", sched), ("Stop", stop)):
            key = f"Load{kind}{word}"
            if key in extra:
                try:
                    table[index] = _number(key, extra[key], integer)
                except ValueError as exc:
                    problems.append(str(exc))
        if index in stop and index not in sched and f"LoadSched{word}" not in extra:
            problems.append(f"LoadStop{word}={extra[f'LoadStop{word}']}: needs LoadSched{word}")
        elif index in stop and index in sched:
            low = lower_is_worse(index)
            if (stop[index] >= sched[index]) if low else (stop[index] <= sched[index]):
                side = "below" if low else "above"
                problems.append(
                    f"LoadStop{word}={extra[f'LoadStop{word}']}: must be {side} "
                    f"LoadSched{word}={extra[f'LoadSched{word}']}"
                )
    if problems:
        raise ValueError("; ".join(problems))
    return Thresholds(sched=sched, stop=stop)


def by_node(partitions: Iterable[tuple[str, Iterable[str], Thresholds]]) -> dict[str, Thresholds]:
    """Each node's thresholds: the last partition listing the node wins, even one with
    none set (it then has none), as the spec's "the last partition's configuration"."""
    out: dict[str, Thresholds] = {}
    for name, nodes, thresholds in partitions:
        for node in nodes:
            out[node] = Thresholds(thresholds.sched, thresholds.stop, name)
    return out
