"""Whether a job shares its nodes, spelled as Slurm spells it (pure).

``sbatch --exclusive`` asks for whole nodes (Slurm's job "shared" value NONE), and
``--oversubscribe`` lets the job share even what is usually dedicated. squeue's ``%h``
(OVER_SUBSCRIBE), ``scontrol show job``'s ``OverSubscribe=`` and the ``oversubscribe``
key of ``SLURM_RESUME_FILE`` print NO, YES or OK (Slurm's squeue man page, ``%h``: "NO" if
the job requires exclusive node access, "YES" if it was submitted with the oversubscribe
option, "OK" otherwise); the ``exclusive`` key prints NO, NODE, USER, MCS or TOPO.
"""

from __future__ import annotations

EXCLUSIVE_NODE = "NODE"


def exclusive_text(exclusive: str) -> str:
    """The ``exclusive`` value (NO when the job may share its nodes)."""
    return exclusive or "NO"


def oversubscribe_text(exclusive: str, oversubscribe: bool) -> str:
    """The ``OverSubscribe`` value of a job."""
    if exclusive == EXCLUSIVE_NODE:
        return "NO"
    if exclusive:
        return exclusive  # USER, MCS, TOPO are printed by name
    return "YES" if oversubscribe else "OK"


__all__ = ["EXCLUSIVE_NODE", "exclusive_text", "oversubscribe_text"]
