"""Node states as the event log spells them, folded into the power-hours categories."""

from __future__ import annotations

import pytest

from cluster.core.states import NodeBase, NodeFlag, sinfo_long
from simulator.report_nodes import NOT_POWERED, category


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("idle", "IDLE"),
        ("planned", "IDLE"),
        ("mixed-", "MIXED"),
        ("allocated", "ALLOCATED"),
        ("allocated+", "ALLOCATED"),
        ("completing", "COMPLETING"),
        ("idle~", "POWERED_DOWN"),
        ("drained~", "POWERED_DOWN"),  # the power a node draws decides first
        ("idle#", "POWERING_UP"),
        ("idle%", "POWERING_DOWN"),
        ("idle!", "IDLE"),  # power down pending: still up
        ("down*", "DOWN"),
        ("idle*", "DOWN"),  # not responding
        ("drained", "DRAINED"),
        ("draining", "DRAINING"),
        ("drng", "DRAINING"),
        ("reboot^", "REBOOT"),
        ("future", "FUTURE"),
        ("IDLE+DRAIN+POWERED_DOWN", "POWERED_DOWN"),
        ("MIXED+DRAIN", "DRAINING"),
        ("IDLE+DRAIN", "DRAINED"),
    ],
)
def test_category(state: str, expected: str) -> None:
    assert category(state) == expected


@pytest.mark.parametrize(
    ("base", "flags", "expected"),
    [
        (NodeBase.IDLE, NodeFlag.POWERED_DOWN, "POWERED_DOWN"),
        (NodeBase.IDLE, NodeFlag.POWERING_UP, "POWERING_UP"),
        (NodeBase.ALLOCATED, NodeFlag.DRAIN, "DRAINING"),
        (NodeBase.MIXED, NodeFlag.PLANNED, "MIXED"),
    ],
)
def test_what_the_controller_prints_is_read_back(base: NodeBase, flags: NodeFlag, expected: str) -> None:
    assert category(sinfo_long(base, flags)) == expected


def test_not_powered() -> None:
    assert {"POWERED_DOWN", "POWERING_UP", "POWERING_DOWN"} <= NOT_POWERED
    assert "IDLE" not in NOT_POWERED and "DOWN" not in NOT_POWERED
