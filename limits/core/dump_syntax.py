"""The syntax of a ``sacctmgr dump`` file's lines, shared by ``sacctmgr load`` and by the
What-if form that edits a dump as text."""

from __future__ import annotations

import re

# ``Kind - 'name':Option=value:...``; sacctmgr writes every name quoted.
LINE = re.compile(r"^\s*(Cluster|QOS|Parent|Account|User)\s*-\s*'([^']*)'\s*(?::(.*))?$", re.IGNORECASE)


def split_options(text: str | None, *, keep_quotes: bool = False) -> list[str]:
    """``A='x y':B=cpu=1`` -> ``["A=x y", "B=cpu=1"]``: a ``:`` inside quotes belongs to its
    value. ``keep_quotes`` leaves the quotes in, for rewriting the line as it was written."""
    out, cur, quoted = [], "", False
    for ch in text or "":
        if ch == "'":
            quoted = not quoted
            if keep_quotes:
                cur += ch
        elif ch == ":" and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [f for f in out if f.strip()]
