"""Slurm's two ways of folding lists of numbers (the standard library only).

- :func:`fold_ints`: a set of ids as ranges, ``0-2,5`` (task ids in srun's messages, the
  kernel's ``Cpus_allowed_list``, GRES device indices in ``GresUsed=``);
- :func:`fold_repeats`: a per-node list with runs of equal values folded, ``4(x2),2``
  (``SLURM_TASKS_PER_NODE``, ``SLURM_JOB_CPUS_PER_NODE``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def fold_ints(ids: Iterable[int]) -> str:
    """``[5, 0, 1, 2]`` -> ``0-2,5``: sorted, each run of consecutive ids as ``a-b``."""
    ordered = sorted(set(ids))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def fold_repeats(counts: Sequence[int]) -> str:
    """``[4, 4, 2]`` -> ``4(x2),2``: in order, each run of equal values as ``v(xN)``."""
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        parts.append(f"{counts[i]}(x{j - i})" if j - i > 1 else str(counts[i]))
        i = j
    return ",".join(parts)
