"""slurm.conf's ``PrivateData``: what regular users may not see of one another.

After the slurm.conf man page: a comma list of ``accounts``, ``cloud``, ``events``,
``jobs``, ``nodes``, ``partitions``, ``reservations``, ``usage``, ``users``, or ``all``
for every one of them; the words are case-insensitive.  Operators, administrators (and,
for jobs, usage and accounts, the coordinators of the account) are not restricted.
"""

from __future__ import annotations

WORDS = frozenset(
    ("accounts", "cloud", "events", "jobs", "nodes", "partitions", "reservations", "usage", "users")
)


def parse_private_data(text: str | None) -> frozenset[str]:
    """The restricted kinds of data; ValueError names an unknown word."""
    out: set[str] = set()
    for raw in (text or "").split(","):
        word = raw.strip().lower()
        if not word:
            continue
        if word == "all":
            out |= WORDS
        elif word in WORDS:
            out.add(word)
        else:
            raise ValueError(
                f"invalid PrivateData word '{raw.strip()}' (one of all, {', '.join(sorted(WORDS))})"
            )
    return frozenset(out)
