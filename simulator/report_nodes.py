"""A node's state, as the event log spells it (sinfo's ``%T``: ``idle~``, ``mixed-``,
``draining``), folded into the one category that its power-state hours count under.

sinfo prints one word and at most one suffix for a base state and its flags (sinfo(1),
NODE STATE CODES), so the category is read back from them, in this order:

1. the power suffix: ``~`` POWERED_DOWN, ``#`` POWERING_UP, ``%`` POWERING_DOWN — the
   power a node draws is the point of these hours, so a powered-down drained node counts
   as POWERED_DOWN;
2. ``down`` or a node not responding (``*``): DOWN;
3. ``drained`` / ``draining``: DRAINED / DRAINING;
4. the base word: ALLOCATED, MIXED, COMPLETING, IDLE (``planned``, ``reserved`` and
   ``maint`` are idle nodes), REBOOT (``reboot``, ``boot``), and UNKNOWN, FUTURE, INVAL.

Other suffixes (``!`` power down pending, ``$`` maintenance, ``@``/``^`` reboot, ``-``
planned, ``+`` completing) leave the word's category.  sinfo's short words (``%t``:
``alloc``, ``mix``, ``drng``) and scontrol's long form (``IDLE+DRAIN+POWERED_DOWN``) are
read too.
"""

from __future__ import annotations

from functools import cache

from cluster.core.states import SUFFIXES, NodeFlag

POWERED_DOWN, POWERING_UP, POWERING_DOWN = "POWERED_DOWN", "POWERING_UP", "POWERING_DOWN"
# Nodes in these categories are not counted as powered up (nor is a FUTURE node, which
# does not exist yet) by utilisation_powered.
NOT_POWERED = frozenset({POWERED_DOWN, POWERING_UP, POWERING_DOWN, "FUTURE"})

_POWER_FLAGS = {
    NodeFlag.POWERED_DOWN: POWERED_DOWN,
    NodeFlag.POWERING_UP: POWERING_UP,
    NodeFlag.POWERING_DOWN: POWERING_DOWN,
}
_SUFFIX_CHARS = {char: flag for flag, char in SUFFIXES}
_WORDS = {
    "idle": "IDLE",
    "planned": "IDLE",
    "plnd": "IDLE",
    "reserved": "IDLE",
    "resv": "IDLE",
    "maint": "IDLE",
    "mixed": "MIXED",
    "mix": "MIXED",
    "allocated": "ALLOCATED",
    "alloc": "ALLOCATED",
    "completing": "COMPLETING",
    "comp": "COMPLETING",
    "down": "DOWN",
    "drained": "DRAINED",
    "drain": "DRAINED",
    "draining": "DRAINING",
    "drng": "DRAINING",
    "reboot": "REBOOT",
    "boot": "REBOOT",
    "unknown": "UNKNOWN",
    "unk": "UNKNOWN",
    "future": "FUTURE",
    "futr": "FUTURE",
    "inval": "INVAL",
}


@cache
def category(state: str) -> str:
    """The power-hours category of a node state string (see the module's docstring)."""
    text = state.strip()
    if "+" in text.rstrip("+") and text.upper() == text:
        return _long_form(text)
    word = text.rstrip("".join(_SUFFIX_CHARS) + "-+").lower()
    suffix = text[len(word) :]
    for char in suffix:
        flag = _SUFFIX_CHARS.get(char)
        if flag in _POWER_FLAGS:
            return _POWER_FLAGS[flag]
    if "*" in suffix:
        return "DOWN"
    return _WORDS.get(word, word.upper() or "UNKNOWN")


def _long_form(text: str) -> str:
    """scontrol's ``BASE+FLAG+FLAG``."""
    base, *flags = text.split("+")
    for flag, name in _POWER_FLAGS.items():
        if flag.name in flags:
            return name
    if base == "DOWN" or "NOT_RESPONDING" in flags:
        return "DOWN"
    if "DRAIN" in flags:
        return "DRAINING" if base in ("ALLOCATED", "MIXED") or "COMPLETING" in flags else "DRAINED"
    return base
