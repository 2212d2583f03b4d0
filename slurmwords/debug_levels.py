"""Slurm's debug levels: SlurmctldDebug and SlurmdDebug in slurm.conf, ``scontrol
setdebug``'s argument."""

from __future__ import annotations

# In Slurm's order: a level's number is its index.
NAMES = ("quiet", "fatal", "error", "info", "verbose", "debug", "debug2", "debug3", "debug4", "debug5")


def config_level(text: str) -> str:
    """slurm.conf's value (log_string2num): a name in any case, or a number read as atoi
    reads it, above debug5 taken as debug5."""
    word = text.strip()
    if word[:1].isdigit():
        digits = word[: len(word) - len(word.lstrip("0123456789"))]
        return NAMES[min(int(digits), len(NAMES) - 1)]
    lowered = word.lower()
    if lowered in NAMES:
        return lowered
    raise ValueError(f"not a debug level ({', '.join(NAMES)}, or 0-9)")


def setdebug_level(word: str) -> str | None:
    """``scontrol setdebug``'s argument: a name in any case, or a whole number 0-9; None
    for anything else ("invalid debug level")."""
    lowered = word.lower()
    if lowered in NAMES:
        return lowered
    if lowered.isdigit() and int(lowered) < len(NAMES):
        return NAMES[int(lowered)]
    return None
