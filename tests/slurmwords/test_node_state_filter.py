"""sinfo -t's list of node states, read as sinfo reads it."""

from __future__ import annotations

import pytest

from slurmwords.node_state_filter import VALID_STATES, parse_node_states


@pytest.mark.parametrize(
    ("word", "state"),
    [
        ("idle", "IDLE"),
        ("IDLE", "IDLE"),
        ("i", "IDLE"),  # a prefix, as sinfo's strncasecmp
        ("d", "DOWN"),  # the base states come first
        ("dr", "DRAIN"),
        ("drained", "DRAINED"),
        ("drng", "DRAINING"),
        ("alloc", "ALLOCATED"),
        ("mix", "MIXED"),
        ("unk", "UNKNOWN"),
        ("futr", "FUTURE"),
        ("comp", "COMPLETING"),
        ("no_respond", "NOT_RESPONDING"),
        ("resv", "RESERVED"),
        ("powered_down", "POWERED_DOWN"),
        ("maint", "MAINTENANCE"),
        ("plnd", "PLANNED"),
        ("cloud", "CLOUD"),
    ],
)
def test_each_word_names_the_state_sinfo_gives_it(word, state):
    assert parse_node_states(word).states == (state,)


def test_commas_select_any_and_an_ampersand_all():
    assert parse_node_states("idle,down").states == ("IDLE", "DOWN")
    assert not parse_node_states("idle,down").every
    both = parse_node_states("idle&drain")
    assert both.states == ("IDLE", "DRAIN") and both.every
    assert parse_node_states("ALL").states is None


@pytest.mark.parametrize("text", ["bogus", "idle,bogus", ",", "x&idle"])
def test_a_word_naming_no_state_is_refused_with_sinfo_s_message(text):
    with pytest.raises(ValueError, match=r'^Bad state string: "'):
        parse_node_states(text)
    assert "idle" in VALID_STATES.split(",") and "drain" in VALID_STATES.split(",")


IDLE = ("IDLE", (), 0, None)
DRAINED = ("IDLE", ("DRAIN",), 0, "DRAINED")
DRAINING = ("MIXED", ("DRAIN",), 4, "DRAINING")
MIXED = ("MIXED", (), 4, None)
ALLOCATED = ("ALLOCATED", (), 16, None)
DOWN_NORESP = ("DOWN", ("NOT_RESPONDING",), 0, None)


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("idle", {IDLE, DRAINED}),  # a drained idle node is IDLE too, as in sinfo
        ("drain", {DRAINED, DRAINING}),
        ("drained", {DRAINED}),
        ("draining", {DRAINING}),
        ("alloc", {DRAINING, MIXED, ALLOCATED}),  # CPUs allocated, as sinfo's ALLOCATED
        ("mixed", {DRAINING, MIXED}),
        ("idle&drain", {DRAINED}),
        ("down,no_respond", {DOWN_NORESP}),
        ("all", {IDLE, DRAINED, DRAINING, MIXED, ALLOCATED, DOWN_NORESP}),
    ],
)
def test_which_nodes_a_list_selects(text, selected):
    nodes = [IDLE, DRAINED, DRAINING, MIXED, ALLOCATED, DOWN_NORESP]
    wanted = parse_node_states(text)
    assert {n for n in nodes if wanted.selects(*n)} == selected
