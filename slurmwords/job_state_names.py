"""The job state names squeue ``-t`` and scancel ``--state`` take, as Slurm's
``job_state_num`` reads them: a state's name or its compact code, any case.

Slurm 23.11 knows states fsched never gives a job (RESIZING, REVOKED, STAGE_OUT, ...);
they are valid words that match no job, not errors.  Their order is Slurm's, which its
"Valid job states include:" line prints.
"""

from __future__ import annotations

# (name, compact code), in the order of Slurm's job state list.
SLURM_JOB_STATES: tuple[tuple[str, str], ...] = (
    ("PENDING", "PD"),
    ("RUNNING", "R"),
    ("SUSPENDED", "S"),
    ("COMPLETED", "CD"),
    ("CANCELLED", "CA"),
    ("FAILED", "F"),
    ("TIMEOUT", "TO"),
    ("NODE_FAIL", "NF"),
    ("PREEMPTED", "PR"),
    ("BOOT_FAIL", "BF"),
    ("DEADLINE", "DL"),
    ("OUT_OF_MEMORY", "OOM"),
    ("COMPLETING", "CG"),
    ("CONFIGURING", "CF"),
    ("RESIZING", "RS"),
    ("RESV_DEL_HOLD", "RD"),
    ("REQUEUED", "RQ"),
    ("REQUEUE_FED", "RF"),
    ("REQUEUE_HOLD", "RH"),
    ("REVOKED", "RV"),
    ("SIGNALING", "SI"),
    ("SPECIAL_EXIT", "SE"),
    ("STAGE_OUT", "SO"),
    ("STOPPED", "ST"),
)
VALID_LIST = ",".join(name for name, _code in SLURM_JOB_STATES)

_BY_WORD = {word: name for name, code in SLURM_JOB_STATES for word in (name, code)}


def state_name(word: str) -> str | None:
    """The state a word names (``pd`` -> ``PENDING``), None for no state."""
    return _BY_WORD.get(word.strip().upper())
