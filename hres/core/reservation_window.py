"""A reservation's HRES amounts checked over its whole window, pure.

A reservation that starts later is checked as one active now is: at every moment of its
window, its amounts must fit on the layers beside what the other reservations of that
moment hold and what the running jobs still hold then.  The reserved amounts only change
when another reservation starts, so the moments to check are the window's start and the
starts of the other reservations within it.  A running job counts until its expected end
(start plus time limit; no limit: for ever), as it does for the nodes of a reservation
("Requested nodes are busy").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from hres.core.layers import Charge, HresState, check_reservation
from slurmwords.licenses import LicenseItem


@dataclass(frozen=True, slots=True)
class Reserved:
    """Another reservation's HRES amounts (items naming their layer) and its window."""

    name: str
    start: datetime
    end: datetime
    items: tuple[LicenseItem, ...]


@dataclass(frozen=True, slots=True)
class Holding:
    """What a running job holds, and when it is expected to end (None: no time limit)."""

    charges: tuple[Charge, ...]
    end: datetime | None


class ReservationConflict(ValueError):
    """The amounts do not fit at ``when`` (the first such moment of the window)."""

    def __init__(self, message: str, when: datetime) -> None:
        super().__init__(message)
        self.when = when


def check_window(
    state: HresState,
    name: str,
    items: Sequence[LicenseItem],
    *,
    start: datetime,
    end: datetime,
    now: datetime,
    others: Sequence[Reserved] = (),
    holdings: Sequence[Holding] = (),
) -> None:
    """Raise :class:`ReservationConflict` unless ``items`` fit on ``state``'s layers
    throughout ``[start, end)`` (from ``now`` on, for a window already begun).

    ``state`` carries the layers without usage or reservations.  Another reservation
    naming a layer that no longer exists is left out, as the scheduler leaves it out."""
    first = max(start, now)
    if end <= first:
        return
    state.with_reservations({name: items})  # a layer it names must exist, whenever it starts
    valid = []
    for other in others:
        try:
            state.with_reservations({other.name: other.items})
        except ValueError:
            continue
        valid.append(other)
    moments = sorted({first} | {o.start for o in valid if first < o.start < end})
    for when in moments:
        active = {o.name: o.items for o in valid if o.start <= when < o.end}
        usage = [c for h in holdings if when <= now or h.end is None or h.end > when for c in h.charges]
        try:
            check_reservation(state.with_reservations(active).with_usage(usage), name, items)
        except ValueError as exc:
            raise ReservationConflict(str(exc), when) from None


__all__ = ["Holding", "ReservationConflict", "Reserved", "check_window"]
