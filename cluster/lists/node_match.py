"""A regular expression that finds a node in a folded NodeList (``node[01-03,07]``), so a
database can answer "jobs that ran on node02" without expanding every job's list.

Pure (no Django).  It covers the forms ClusterShell folds to, which are what a job's
NodeList holds: ``name`` alone, and ``head[ranges]tail`` with the last run of digits
folded, each range ``a`` or ``a-b`` zero-padded to one width (``01-12``) or unpadded
(``1-12``).  A name that varies in two runs of digits (``rack[1-2]-n[01-02]``) is matched
only where it appears written out.
"""

from __future__ import annotations

import re

_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")


def _fixed_width(digits: str, *, at_most: bool) -> str:
    """Strings of exactly len(digits) digits, leading zeros allowed, whose value is <= (or
    >=) that of ``digits``."""
    alts = [digits]
    for i, ch in enumerate(digits):
        d = int(ch)
        lo, hi = (0, d - 1) if at_most else (d + 1, 9)
        if lo > hi:
            continue
        rest = len(digits) - i - 1
        alts.append(re.escape(digits[:i]) + f"[{lo}-{hi}]" + (rf"\d{{{rest}}}" if rest else ""))
    return "(?:" + "|".join(alts) + ")"


def _bounds(digits: str) -> tuple[str, str]:
    """(the lower ends, the upper ends) of the ranges that hold this number.

    A range's members are padded to the width of its lower end when that starts with a
    zero.  So a zero-padded name (``07``) is held by ranges whose lower end has its width;
    an unpadded one (``107``) by ranges whose lower end is no wider than it (``1-``, ``05-``,
    ``100-``).  An upper end may always be wider (``098-1000``).
    """
    width = len(digits)
    lower = _fixed_width(digits, at_most=True)
    if not (digits.startswith("0") and width > 1) and width > 1:
        lower = f"(?:{lower}|\\d{{1,{width - 1}}})"
    upper = f"(?:{_fixed_width(digits, at_most=False)}|[1-9]\\d{{{width},}})"
    return lower, upper


def nodelist_pattern(name: str) -> str:
    """A pattern matching a NodeList that holds ``name``."""
    alone = rf"(^|,){re.escape(name)}(,|$)"
    match = _LAST_NUMBER.match(name)
    if not match:
        return alone
    head, digits, tail = match.groups()
    lower, upper = _bounds(digits)
    item = rf"(?:{digits}|{lower}-{upper})"
    folded = rf"(^|,){re.escape(head)}\[([^]]*,)?{item}(,[^]]*)?\]{re.escape(tail)}(,|$)"
    return f"{alone}|{folded}"
