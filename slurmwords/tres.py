"""Trackable RESources (TRES) strings, as sacctmgr and slurm.conf write them (pure, no Django).

A TRES is ``type`` or ``type/name``: ``cpu``, ``mem``, ``energy``, ``node``, ``billing``,
``fs/disk``, ``vmem``, ``pages`` (Slurm's defaults), and the named ones ``gres/<name>[:type]``,
``license/<name>``, ``bb/<name>``, ``fs/lustre``, ``ic/ofed``.  Limits are written
``cpu=1500,mem=200G,gres/gpu=50``: memory in MB unless suffixed (``K``, ``M``, ``G``, ``T``,
``P``, binary), every other count a plain integer, and ``-1`` unsets the entry (sacctmgr's
``GrpTRES=cpu=-1``).  Printing follows Slurm: default TRES in their id order (cpu, mem,
energy, node, billing, fs/disk, vmem, pages), then the named ones by name; memory with the
largest unit that divides it.

``TRESBillingWeights`` (a partition option, see "Specific limits over GRES" in Slurm's
resource_limits.html) is parsed by :func:`parse_billing_weights` and applied by
:func:`billing`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slurmwords.memory import format_memory_mb

# A parsed TRES map: name -> count (MB for mem, joules for energy).
TresMap = dict[str, int]

DEFAULT_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages")
_ORDER = {name: i for i, name in enumerate(DEFAULT_TRES)}
# Types that need a name after the slash.
_NAMED_TYPES = ("gres", "license", "bb")
_FIXED_NAMED = frozenset({"fs/disk", "fs/lustre", "ic/ofed"})
_MEMORY_LIKE = frozenset({"mem", "vmem"})

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-@]+(?::[A-Za-z0-9_.\-@]+)?$")
_COUNT_RE = re.compile(r"^(-?[0-9]+)([KkMmGgTtPp])?$")
_MB_PER_UNIT = {"K": None, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


class TresError(ValueError):
    """A TRES string or weight that does not parse; the message says which part and why."""


def canonical_name(raw: str, known: Iterable[str] | None = None) -> str:
    """``CPU`` -> ``cpu``, ``GRES/gpu:tesla`` -> ``gres/gpu:tesla``; unknown TRES raise.

    The type is case-insensitive (as Slurm's), the name after the slash is kept as written.
    With ``known`` (AccountingStorageTRES plus the defaults), a TRES outside it is refused
    too: Slurm cannot limit what it does not track.
    """
    text = raw.strip()
    if not text:
        raise TresError("empty TRES name")
    kind, slash, name = text.partition("/")
    kind = kind.lower()
    if not slash:
        if kind not in _ORDER or "/" in kind:
            raise TresError(f"Unknown TRES '{raw}'")
        result = kind
    elif kind in _NAMED_TYPES:
        if not _NAME_RE.match(name) or (kind != "gres" and ":" in name):
            raise TresError(f"Invalid TRES name '{raw}'")
        result = f"{kind}/{name}"
    elif f"{kind}/{name.lower()}" in _FIXED_NAMED:
        result = f"{kind}/{name.lower()}"
    else:
        raise TresError(f"Unknown TRES '{raw}'")
    if known is not None and result not in _ORDER and result not in set(known):
        raise TresError(f"Unknown TRES '{raw}': not in AccountingStorageTRES")
    return result


def _parse_count(name: str, value: str, item: str) -> int:
    m = _COUNT_RE.match(value.strip())
    if not m:
        raise TresError(f"Invalid TRES value in '{item}': expected a count")
    number = int(m.group(1))
    unit = m.group(2)
    if number == -1 and unit is None:
        return -1
    if number < 0:
        raise TresError(f"Invalid TRES value in '{item}': negative counts other than -1 are not allowed")
    if unit is None:
        return number
    if name not in _MEMORY_LIKE:
        raise TresError(f"Invalid TRES value in '{item}': only memory takes a unit suffix")
    factor = _MB_PER_UNIT[unit.upper()]
    return math.ceil(number / 1024) if factor is None else number * factor


def parse_tres(text: str, *, known: Iterable[str] | None = None) -> dict[str, int | None]:
    """``cpu=1500,mem=200G,gres/gpu=-1`` -> ``{"cpu": 1500, "mem": 204800, "gres/gpu": None}``.

    ``None`` is ``-1``: remove the entry (see :func:`apply_tres_update`).  An empty string is
    an empty map.  Duplicates, unknown TRES, a missing ``=`` and negative values other than
    ``-1`` raise :class:`TresError` naming the offending item.
    """
    out: dict[str, int | None] = {}
    if not text.strip():
        return out
    for item in text.split(","):
        raw_name, eq, value = item.partition("=")
        if not eq or not raw_name.strip() or not value.strip():
            raise TresError(f"Invalid TRES specification '{item}': expected <type>[/<name>]=<count>")
        name = canonical_name(raw_name, known)
        if name in out:
            raise TresError(f"TRES '{name}' given twice in '{text}'")
        count = _parse_count(name, value, item)
        out[name] = None if count == -1 else count
    return out


def parse_tres_limits(text: str, *, known: Iterable[str] | None = None) -> TresMap:
    """A TRES map for a limit that is being defined (no ``-1`` entries kept)."""
    return {k: v for k, v in parse_tres(text, known=known).items() if v is not None}


def apply_tres_update(current: Mapping[str, int], update: Mapping[str, int | None]) -> TresMap:
    """sacctmgr ``set GrpTRES=...``: entries given replace, ``None`` (``-1``) removes."""
    out = dict(current)
    for name, value in update.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def sort_key(name: str) -> tuple[int, str]:
    return (_ORDER.get(name, len(_ORDER)), name)


def format_count(name: str, value: float) -> str:
    """One TRES value as Slurm prints it: memory with a unit, others as integers."""
    value = int(value)
    if name in _MEMORY_LIKE and value > 0:
        return format_memory_mb(value)
    return str(value)


def format_tres(tres: Mapping[str, float | None]) -> str:
    """``{"mem": 204800, "cpu": 1500}`` -> ``cpu=1500,mem=200G`` (``None`` entries skipped)."""
    return ",".join(
        f"{name}={format_count(name, tres[name])}"
        for name in sorted(tres, key=sort_key)
        if tres[name] is not None
    )


def gres_tres(request: str) -> TresMap:
    """A job's GRES request (``gpu:2``, ``gpu:tesla:2,nic``) as TRES per node.

    A typed request counts for the type and for the generic name (``gres/gpu:tesla`` and
    ``gres/gpu``); an untyped one only for the generic name, which is why a limit on
    ``gres/gpu:tesla`` does not hold back ``--gres=gpu:2`` (Slurm's resource_limits.html,
    "Specific limits over GRES").
    """
    out: TresMap = {}
    if not request.strip():
        return out
    for item in request.split(","):
        parts = item.strip().split(":")
        if not parts[0] or len(parts) > 3:
            raise TresError(f"Invalid GRES specification '{item}'")
        count = 1
        if len(parts) > 1 and parts[-1].isdigit():
            count = int(parts[-1])
            parts = parts[:-1]
        if len(parts) > 2 or not all(_NAME_RE.match(p) for p in parts):
            raise TresError(f"Invalid GRES specification '{item}'")
        names = [f"gres/{parts[0]}"] + ([f"gres/{parts[0]}:{parts[1]}"] if len(parts) == 2 else [])
        for name in names:
            out[name] = out.get(name, 0) + count
    return out


# --------------------------------------------------------------------------- billing


@dataclass(frozen=True)
class BillingWeights:
    """Parsed ``TRESBillingWeights``: weight per unit of each TRES (memory per MB).

    ``max_tres`` is ``PriorityFlags=MAX_TRES``: billing is the largest weighted node TRES
    plus the weighted global ones (licenses, burst buffers) instead of the sum.
    """

    weights: Mapping[str, float] = field(default_factory=dict)
    max_tres: bool = False

    def __bool__(self) -> bool:
        return bool(self.weights)


_WEIGHT_RE = re.compile(r"^([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)([KkMmGgTtPp])?$")


def parse_billing_weights(text: str, *, max_tres: bool = False) -> BillingWeights:
    """``CPU=1.0,Mem=0.25G,GRES/gpu=2.0``: memory weights are per MB, or per the suffix's unit
    (``0.25G`` is 0.25 per GB).  Unknown TRES and negative or malformed weights raise."""
    weights: dict[str, float] = {}
    if text.strip():
        for item in text.split(","):
            raw_name, eq, value = item.partition("=")
            if not eq:
                raise TresError(f"Invalid TRESBillingWeights item '{item}': expected <TRES>=<weight>")
            name = canonical_name(raw_name)
            m = _WEIGHT_RE.match(value.strip())
            if not m:
                raise TresError(f"Invalid TRESBillingWeights weight in '{item}'")
            weight = float(m.group(1))
            unit = m.group(2)
            if unit is not None:
                if name not in _MEMORY_LIKE:
                    raise TresError(
                        f"Invalid TRESBillingWeights weight in '{item}': only memory takes a unit"
                    )
                factor = _MB_PER_UNIT[unit.upper()]
                weight = weight * 1024 if factor is None else weight / factor
            if name in weights:
                raise TresError(f"TRESBillingWeights names '{name}' twice")
            weights[name] = weight
    return BillingWeights(weights, max_tres)


def billing(tres: Mapping[str, float], weights: BillingWeights | None, *, nodes: int = 1) -> float:
    """The job's billing TRES: its CPUs when no weights are set (Slurm's default), else the
    weighted sum (or, with MAX_TRES, the largest weighted per-node TRES times the node count
    plus the weighted global TRES)."""
    if not weights:
        return float(tres.get("cpu", 0))
    if not weights.max_tres:
        return sum(w * tres.get(name, 0) for name, w in weights.weights.items())
    nodes = max(nodes, 1)
    node_max = 0.0
    global_sum = 0.0
    for name, w in weights.weights.items():
        value = w * tres.get(name, 0)
        if name.startswith(("license/", "bb/")):
            global_sum += value
        elif name != "node":
            node_max = max(node_max, value / nodes)
    return node_max * nodes + global_sum


__all__ = [
    "DEFAULT_TRES",
    "BillingWeights",
    "TresError",
    "TresMap",
    "apply_tres_update",
    "billing",
    "canonical_name",
    "format_count",
    "format_tres",
    "gres_tres",
    "parse_billing_weights",
    "parse_tres",
    "parse_tres_limits",
    "sort_key",
]
