"""``sinfo -t/--states``: which nodes a list of node states selects, as sinfo reads it.

The list is separated by ``,`` (a node in any of the states) or, when it holds an ``&``,
by ``&`` and ``,`` alike (a node in all of them); ``all`` selects every node. Each state
is matched case-insensitively as a prefix of a name, in sinfo's order: the base states
first (``d`` is DOWN, ``dr`` DRAIN), then the flags. A node is ALLOCATED when it has
CPUs allocated (mixed ones too, as in sinfo); DRAIN is the flag whatever the base,
DRAINED and DRAINING the words the node's state is shown with; the other flags match
when set. A word that names no state is refused with sinfo's message.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

# sinfo's order of look-up: the base states with their compact names (ERROR is Slurm's
# and never a fsched node's), then the flags.
_BASES = (
    ("UNKNOWN", "UNK"),
    ("DOWN", "DOWN"),
    ("IDLE", "IDLE"),
    ("ALLOCATED", "ALLOC"),
    ("ERROR", "ERR"),
    ("MIXED", "MIX"),
    ("FUTURE", "FUTR"),
)
# (names a word may begin, the state it selects); the selected state is a flag's name as
# the controller stores it, or DRAIN/DRAINED/DRAINING, or one Slurm has and fsched never
# sets (BLOCKED, FAIL).
_FLAGS = (
    (("BLOCKED", "BLOCK"), "BLOCKED"),
    (("PLANNED", "PLND"), "PLANNED"),
    (("DRAIN",), "DRAIN"),
    (("DRAINED",), "DRAINED"),
    (("RESV", "RESERVED"), "RESERVED"),
    (("DRAINING", "DRNG"), "DRAINING"),
    (("COMPLETING", "COMP"), "COMPLETING"),
    (("NO_RESPOND",), "NOT_RESPONDING"),
    (("POWERING_DOWN",), "POWERING_DOWN"),
    (("POWERED_DOWN",), "POWERED_DOWN"),
    (("POWER_DOWN",), "POWER_DOWN"),
    (("POWERING_UP",), "POWERING_UP"),
    (("FAIL",), "FAIL"),
    (("MAINT",), "MAINTENANCE"),
    (("REBOOT_REQUESTED",), "REBOOT_REQUESTED"),
    (("REBOOT_ISSUED",), "REBOOT_ISSUED"),
    (("CLOUD",), "CLOUD"),
)
VALID_STATES = ",".join(
    [long.lower() for long, _ in _BASES]
    + [names[0].lower() for names, _ in _FLAGS if names[0] not in ("BLOCKED", "PLANNED")]
)


def _state_of(word: str) -> str:
    up = word.upper()
    for long, short in _BASES:
        if long.startswith(up) or short.startswith(up):
            return long
    for names, state in _FLAGS:
        if any(name.startswith(up) for name in names):
            return state
    raise ValueError(f'Bad state string: "{word}"')


@dataclass(frozen=True)
class NodeStates:
    """The parsed list: ``states`` (None: all), and whether a node needs all of them."""

    states: tuple[str, ...] | None
    every: bool = False

    def selects(self, base: str, flags: Collection[str], alloc_cpus: int, drain: str | None) -> bool:
        """Whether a node is selected: its base state, its flags' names, the CPUs allocated
        on it and the word its drain is shown with (DRAINED, DRAINING or None)."""
        if self.states is None:
            return True
        matches = (_is(state, base, flags, alloc_cpus, drain) for state in self.states)
        return all(matches) if self.every else any(matches)


def _is(state: str, base: str, flags: Collection[str], alloc_cpus: int, drain: str | None) -> bool:
    if state in ("DRAINED", "DRAINING"):
        return drain == state
    if state == "ALLOCATED":
        return alloc_cpus > 0
    if any(state == long for long, _ in _BASES):
        return base == state
    return state in flags


def parse_node_states(text: str) -> NodeStates:
    """``-t``'s argument; ValueError with sinfo's message for a word naming no state."""
    if text.strip().lower() == "all":
        return NodeStates(None)
    words = [w for w in text.replace("&", ",").split(",") if w]
    if not words:
        raise ValueError(f'Bad state string: "{text}"')
    return NodeStates(tuple(_state_of(w) for w in words), every="&" in text)
