"""A step's id as Slurm writes it: a number (``12.0``), or a word for Slurm's special steps
that fsched has. The interactive step (salloc with ``LaunchParameters=use_interactive_step``,
``srun --interactive``) is slurm.h's ``SLURM_INTERACTIVE_STEP``: it takes no step number
(the job's next srun step is still ``N.0``), its tasks see that number as SLURM_STEP_ID, as
Slurm's do, and every command writes and reads it as ``N.interactive``."""

from __future__ import annotations

INTERACTIVE_STEP = 0xFFFFFFFA  # slurm.h's SLURM_INTERACTIVE_STEP
INTERACTIVE = "interactive"


def step_label(step_id: int | str) -> str:
    """``4294967290`` → ``interactive``; any other id as it is (``0``, ``batch``)."""
    return INTERACTIVE if str(step_id) == str(INTERACTIVE_STEP) else str(step_id)


def step_number(word: str) -> int | None:
    """The number of a step written ``0`` or ``interactive``; None for anything else."""
    if word == INTERACTIVE:
        return INTERACTIVE_STEP
    return int(word) if word.isdigit() else None


def step_key(label: str) -> str:
    """The id an agent reports a step by (``str`` of its number, or ``batch``) of a label."""
    return str(INTERACTIVE_STEP) if label == INTERACTIVE else label


__all__ = ["INTERACTIVE", "INTERACTIVE_STEP", "step_key", "step_label", "step_number"]
