"""sinfo's node state symbols (#13 point 8): every suffix, and the one shown when flags
combine, after Slurm's sinfo(1) NODE STATE CODES and node_state_string_compact()."""

from __future__ import annotations

from itertools import combinations

import pytest

from cluster.core.states import NodeBase, NodeFlag, long_state, sinfo_long, sinfo_short

F = NodeFlag
IDLE, MIXED, ALLOC, DOWN = NodeBase.IDLE, NodeBase.MIXED, NodeBase.ALLOCATED, NodeBase.DOWN

# Slurm's precedence when flags combine: the first of these a node has is its suffix.
PRECEDENCE = (
    ("$", F.MAINTENANCE),
    ("^", F.REBOOT_ISSUED),
    ("@", F.REBOOT_REQUESTED),
    ("#", F.POWERING_UP),
    ("%", F.POWERING_DOWN),
    ("~", F.POWERED_DOWN),
    ("!", F.POWER_DOWN),
    ("*", F.NOT_RESPONDING),
)


@pytest.mark.parametrize(
    ("base", "flags", "short", "long"),
    [
        # $: a node in an active maintenance reservation.
        (IDLE, F.MAINTENANCE, "maint", "maint"),
        (IDLE, F.MAINTENANCE | F.NOT_RESPONDING, "maint*", "maint*"),
        (MIXED, F.MAINTENANCE, "mix$", "mixed$"),
        (ALLOC, F.MAINTENANCE, "alloc$", "allocated$"),
        (DOWN, F.MAINTENANCE, "down$", "down$"),
        (IDLE, F.DRAIN | F.MAINTENANCE, "drain$", "drained$"),
        (MIXED, F.DRAIN | F.MAINTENANCE, "drng$", "draining$"),
        # ^: reboot issued (the node is DOWN until its agent registers again).
        (DOWN, F.REBOOT_ISSUED, "boot^", "reboot^"),
        (DOWN, F.REBOOT_ISSUED | F.NOT_RESPONDING, "boot^", "reboot^"),
        (MIXED, F.REBOOT_ISSUED, "mix^", "mixed^"),
        # @: reboot requested; a node that is not busy reads "boot".
        (IDLE, F.REBOOT_REQUESTED, "boot", "reboot"),
        (IDLE, F.REBOOT_REQUESTED | F.NOT_RESPONDING, "boot*", "reboot*"),
        (IDLE, F.REBOOT_REQUESTED | F.DRAIN, "boot", "reboot"),  # reboot ASAP of an idle node
        (MIXED, F.REBOOT_REQUESTED, "mix@", "mixed@"),
        (ALLOC, F.REBOOT_REQUESTED, "alloc@", "allocated@"),
        (MIXED, F.REBOOT_REQUESTED | F.DRAIN, "drng@", "draining@"),  # reboot ASAP, jobs running
        # The power suffixes.
        (IDLE, F.POWERING_UP, "idle#", "idle#"),
        (ALLOC, F.POWERING_UP, "alloc#", "allocated#"),
        (IDLE, F.POWERING_DOWN, "idle%", "idle%"),
        (IDLE, F.CLOUD | F.POWERED_DOWN, "idle~", "idle~"),
        (IDLE, F.POWER_DOWN, "idle!", "idle!"),
        (IDLE, F.DRAIN | F.POWERED_DOWN, "drain~", "drained~"),
        # *: not responding.
        (DOWN, F.NOT_RESPONDING, "down*", "down*"),
        (IDLE, F.NOT_RESPONDING, "idle*", "idle*"),
        (NodeBase.UNKNOWN, F.NOT_RESPONDING, "unk*", "unknown*"),
        # -: planned by backfill; an idle node planned reads "plnd".
        (MIXED, F.PLANNED, "mix-", "mixed-"),
        (IDLE, F.PLANNED, "plnd", "planned"),
        (ALLOC, F.PLANNED, "alloc", "allocated"),
        # +: allocated while other jobs complete.
        (ALLOC, F.COMPLETING, "alloc+", "allocated+"),
        (MIXED, F.COMPLETING, "comp", "completing"),
        (IDLE, F.COMPLETING, "comp", "completing"),
        # An invalid registration hides everything else.
        (IDLE, F.INVALID_REG | F.DRAIN | F.NOT_RESPONDING, "inval", "inval"),
        # No flag at all.
        (IDLE, F.NONE, "idle", "idle"),
        (MIXED, F.NONE, "mix", "mixed"),
        (NodeBase.FUTURE, F.NONE, "futr", "future"),
    ],
)
def test_every_symbol(base, flags, short, long):
    assert (sinfo_short(base, flags), sinfo_long(base, flags)) == (short, long)


@pytest.mark.parametrize(("first", "second"), list(combinations(PRECEDENCE, 2)), ids=lambda p: p[0])
def test_every_pair_shows_the_symbol_that_comes_first(first, second):
    """On the states that keep their word and take a suffix (mixed, allocated, down,
    drained and draining), two flags show the suffix of the one Slurm ranks first."""
    (char, flag), (_, other) = first, second
    both = flag | other
    assert sinfo_short(MIXED, both) == "mix" + char
    assert sinfo_short(ALLOC, both) == "alloc" + char
    assert sinfo_short(MIXED, both | F.DRAIN) == "drng" + char
    assert sinfo_long(ALLOC, both) == "allocated" + char
    if not both & (F.REBOOT_REQUESTED | F.REBOOT_ISSUED):
        assert sinfo_short(DOWN, both) == "down" + char
        assert sinfo_short(IDLE, both | F.DRAIN) == "drain" + char


@pytest.mark.parametrize(
    ("base", "flags", "short"),
    [
        # Pairs with a flag that replaces the word on an idle or down node.
        (IDLE, F.MAINTENANCE | F.REBOOT_REQUESTED, "maint"),
        (DOWN, F.MAINTENANCE | F.REBOOT_ISSUED, "boot^"),  # a node in maintenance, rebooting
        (IDLE, F.MAINTENANCE | F.POWERED_DOWN, "maint"),
        (IDLE, F.MAINTENANCE | F.PLANNED, "maint"),
        (IDLE, F.REBOOT_REQUESTED | F.POWERING_UP, "boot"),
        (IDLE, F.REBOOT_REQUESTED | F.PLANNED, "boot"),
        (IDLE, F.PLANNED | F.NOT_RESPONDING, "idle*"),
        (IDLE, F.PLANNED | F.POWERED_DOWN, "idle~"),
        (MIXED, F.PLANNED | F.NOT_RESPONDING, "mix*"),
        (MIXED, F.PLANNED | F.REBOOT_REQUESTED, "mix@"),
        (MIXED, F.PLANNED | F.MAINTENANCE, "mix$"),
        (ALLOC, F.COMPLETING | F.NOT_RESPONDING, "alloc*"),
        (ALLOC, F.COMPLETING | F.REBOOT_REQUESTED, "alloc@"),
        (ALLOC, F.COMPLETING | F.DRAIN, "drng"),
        # Not responding used to win over the power suffixes; Slurm ranks it last.
        (IDLE, F.POWERED_DOWN | F.NOT_RESPONDING, "idle~"),
        (IDLE, F.POWERING_UP | F.NOT_RESPONDING, "idle#"),
        (IDLE, F.POWERING_DOWN | F.NOT_RESPONDING, "idle%"),
        (IDLE, F.POWER_DOWN | F.NOT_RESPONDING, "idle!"),
        (DOWN, F.POWERED_DOWN | F.NOT_RESPONDING, "down~"),
    ],
)
def test_pairs_on_words_that_hide_suffixes(base, flags, short):
    assert sinfo_short(base, flags) == short


@pytest.mark.parametrize(
    ("base", "flags", "text"),
    [
        (DOWN, F.REBOOT_ISSUED | F.NOT_RESPONDING, "DOWN+REBOOT_ISSUED+NOT_RESPONDING"),
        (MIXED, F.DRAIN | F.REBOOT_REQUESTED, "MIXED+DRAIN+REBOOT_REQUESTED"),
        (IDLE, F.MAINTENANCE | F.PLANNED, "IDLE+MAINTENANCE+PLANNED"),
        (IDLE, F.CLOUD | F.POWERED_DOWN | F.NOT_RESPONDING, "IDLE+CLOUD+POWERED_DOWN+NOT_RESPONDING"),
        (IDLE, F.POWER_DOWN | F.POWERING_DOWN, "IDLE+POWER_DOWN+POWERING_DOWN"),
        (IDLE, F.DYNAMIC, "IDLE+DYNAMIC_NORM"),
        (NodeBase.FUTURE, F.DYNAMIC, "FUTURE+DYNAMIC_FUTURE"),
    ],
)
def test_scontrol_state_lists_flags_in_slurms_order(base, flags, text):
    assert long_state(base, flags) == text
