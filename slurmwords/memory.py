"""Slurm's memory sizes (``--mem``, ``RealMemory``, a TRES ``mem=``), read and printed (pure).

Megabytes throughout, as Slurm keeps them.  The CLI prints sizes with this module, so it
imports nothing (no ``re``: several ms of every ``squeue``).
"""

from __future__ import annotations

# Binary units; kilobytes are rounded up to whole megabytes instead of multiplied.
_MB_PER_UNIT = {"M": 1, "G": 1024, "T": 1024 * 1024}
_PRINTED_UNITS = ("M", "G", "T", "P")


def parse_memory_mb(text: str) -> int:
    """Parse ``--mem``/``RealMemory`` style sizes into megabytes.

    Plain numbers are MB; suffixes ``K``, ``M``, ``G``, ``T`` (optionally
    followed by ``B``, any case) are binary units.  Kilobytes round *up* to
    whole megabytes, as Slurm's ``str_to_mbytes`` does.
    """
    s = text.strip()
    # lstrip of the ASCII digits alone: str.isdigit() would take "١٢".
    digits = len(s) - len(s.lstrip("0123456789"))
    number, unit = s[:digits], s[digits:].upper()
    if len(unit) == 2 and unit.endswith("B"):
        unit = unit[0]
    if not number or unit not in ("", "K", *_MB_PER_UNIT):
        raise ValueError(f"Invalid memory specification: {text!r}")
    if unit == "K":
        return -(-int(number) // 1024)
    return int(number) * _MB_PER_UNIT[unit or "M"]


def format_memory_mb(mb: int | None) -> str:
    """Megabytes with the largest unit that divides them evenly, as Slurm's exact unit
    conversion prints them: ``2000M``, ``4G``, ``1T``, ``1P``; ``0`` (or unset) is ``0``.
    The inverse of :func:`parse_memory_mb` up to ``T``."""
    if not mb:
        return "0"
    if mb < 0:
        raise ValueError(f"Invalid memory size: {mb}")
    value = int(mb)
    for unit in _PRINTED_UNITS[:-1]:
        if value % 1024:
            return f"{value}{unit}"
        value //= 1024
    return f"{value}{_PRINTED_UNITS[-1]}"
