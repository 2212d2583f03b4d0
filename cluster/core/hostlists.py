"""Hostlists (``node[1-4],gpu[01-02]``) sized before they are expanded (pure: stdlib + ClusterShell).

ClusterShell's RangeSet is a set of integers, so ``NodeSet("node[1-2000000]")`` builds two
million of them (1.4 s; ``node[1-99999999]`` exhausts a large machine) before ``len()`` can
be asked.  :func:`count` reads the text alone and gives an upper bound of the names it
holds; :func:`parse` refuses a list above ``limit`` before ClusterShell sees it.

The bound is the sum over the list's terms (split at ``,``, ``!``, ``&`` and ``^`` outside
brackets) of the product of each term's bracket sizes: no union, difference or intersection
can exceed it, so neither can any set ClusterShell builds on the way.  ``a[1-9]!a[1-8]`` is
thus sized 17, not 1: what matters is the work, not the answer.

Terms are then parsed a few hundred at a time because ClusterShell's scanner copies the rest
of the text at every term (quadratic in the length of a long flat list).  Node groups (``@name``) are not
resolved: ClusterShell would run the upcalls of the host's groups.conf for any API caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException
from ClusterShell.RangeSet import RangeSetException

# An uncompressed list of 10,000 long names fits; a request cannot make us scan more.
MAX_TEXT = 1 << 20
# Indexes longer than this are not node names (Slurm's hostlist parses them as unsigned long).
MAX_INDEX_DIGITS = 18

INVALID = "Invalid node name specified"

_OPS = {
    ",": "update",
    "!": "difference_update",
    "&": "intersection_update",
    "^": "symmetric_difference_update",
}
_DIGITS = re.compile(r"[0-9]+")


def _shown(text: str) -> str:
    """The list as quoted in a message: never the whole of a huge input."""
    shown = "".join(c if c.isprintable() else "?" for c in text[:65])
    return shown if len(shown) <= 64 else shown[:61] + "..."


class HostlistError(ValueError):
    """A hostlist that cannot be parsed; ``detail`` is the message after Slurm's words."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"{INVALID}: {detail}")
        self.detail = detail


class HostlistTooLarge(HostlistError):
    """A hostlist naming more nodes than the caller's limit."""


def _invalid(text: str, why: str) -> HostlistError:
    return HostlistError(f"{_shown(text)} ({why})")


def _terms(text: str) -> list[tuple[str, str]]:
    """``(operator, term)`` pairs, the first operator being ``,``; brackets must balance."""
    out: list[tuple[str, str]] = []
    op, start, depth = ",", 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth:
                raise _invalid(text, "illegal reopening bracket")
            depth = 1
        elif ch == "]":
            if not depth:
                raise _invalid(text, "illegal closing bracket")
            depth = 0
        elif ch in _OPS and not depth:
            out.append((op, text[start:i]))
            op, start = ch, i + 1
    if depth:
        raise _invalid(text, "missing bracket")
    out.append((op, text[start:]))
    for _op, term in out:
        if not term.strip():
            raise _invalid(text, "empty node name")
    return out


def _range_size(text: str, subrange: str) -> int:
    """Names in one ``lo-hi/step`` item of a bracket: ``-8--4`` and ``1-9/2`` included."""
    bounds, _, step_text = subrange.partition("/")
    numbers = [int(d) for d in _DIGITS.findall(bounds)]
    steps = _DIGITS.findall(step_text)
    if len(numbers) < 2:
        return 1
    step = max(int(steps[0]), 1) if steps else 1
    return (max(numbers) - min(numbers)) // step + 1


def _term_size(text: str, term: str) -> int:
    size = 1
    for inner in re.findall(r"\[([^\]]*)\]", term):
        size *= sum(_range_size(text, item) for item in inner.split(","))
    return size


def _check_text(text: str) -> None:
    if len(text) > MAX_TEXT:
        raise _invalid(text, f"longer than {MAX_TEXT} characters")
    if not text.isprintable():
        raise _invalid(text, "control character")
    if any(len(d) > MAX_INDEX_DIGITS for d in _DIGITS.findall(text)):
        # Too large to count, let alone expand: refused as a list too large is.
        raise HostlistTooLarge(f"{_shown(text)} (an index of more than {MAX_INDEX_DIGITS} digits)")


def count(text: str) -> int:
    """An upper bound of the names ``text`` holds, computed without building them.

    Raises HostlistError (``Invalid node name specified: ...``) on a list that cannot be sized.
    """
    _check_text(text)
    if not text.strip():
        return 0
    return sum(_term_size(text, term) for _op, term in _terms(text))


def parse(text: str, *, limit: int, what: str = "nodelist") -> NodeSet:
    """``text`` as a NodeSet, refused (HostlistTooLarge) if it could name more than ``limit``
    nodes; HostlistError (a ValueError) if it cannot be parsed.

    ``what`` names the input in the message (``nodelist``, ``exclude``, ``name``).
    """
    size = count(text)
    if size > limit:
        raise HostlistTooLarge(f"{what} {_shown(text)} names up to {size} nodes, more than {limit}")
    result = NodeSet(resolver=RESOLVER_NOGROUP)
    if size == 0:
        return result
    for op, chunk in _chunks(_terms(text)):
        try:
            part = NodeSet(chunk, resolver=RESOLVER_NOGROUP)
        except (NodeSetException, RangeSetException, ValueError) as exc:
            raise _invalid(text, str(exc)) from None
        getattr(result, _OPS[op])(part)
    return result


def _chunks(terms: list[tuple[str, str]], per_chunk: int = 256) -> list[tuple[str, str]]:
    """Runs of ``,`` terms joined again, a few hundred at a time: ClusterShell's copying stays
    small and its per-call cost is shared (80,000 names: 1.9 s whole, 0.7 s in chunks)."""
    out: list[tuple[str, str]] = []
    run: list[str] = []
    for op, term in terms:
        if op != "," or len(run) >= per_chunk:
            if run:
                out.append((",", ",".join(run)))
                run = []
            if op != ",":
                out.append((op, term.strip()))
                continue
        run.append(term.strip())
    if run:
        out.append((",", ",".join(run)))
    return out


def expand(text: str, *, limit: int, what: str = "nodelist") -> list[str]:
    """The node names of ``text``, in ClusterShell's order (see :func:`parse`)."""
    return list(parse(text, limit=limit, what=what))


def fold(names: Iterable[str]) -> str:
    """``["n1", "n2", "n3"]`` -> ``n[1-3]``."""
    return str(NodeSet.fromlist(list(names), resolver=RESOLVER_NOGROUP))
