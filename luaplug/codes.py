"""Slurm's return codes as a Lua script sees them (``slurm.SUCCESS``, ``slurm.ERROR``,
``slurm.ESLURM_*``) and the messages slurm_strerror gives them.

The ESLURM_* numbers are slurm_errno.h's.  The three HRES codes of the hres/lua plugin
are not in any Slurm release fsched follows: their numbers are fsched's own, in the range
slurm_errno.h keeps for plugin errors (8000-), which a script never needs to know since it
names them.
"""

from __future__ import annotations

SUCCESS = 0
ERROR = -1

# name -> (number, slurm_strerror's message)
ESLURM: dict[str, tuple[int, str]] = {
    "ESLURM_ACCESS_DENIED": (2002, "Access/permission denied"),
    "ESLURM_INVALID_NODE_COUNT": (2006, "Node count specification invalid"),
    "ESLURM_JOB_MISSING_SIZE_SPECIFICATION": (2008, "Job size specification needs to be provided"),
    "ESLURM_INVALID_ACCOUNT": (2045, "Invalid account or account/partition combination specified"),
    "ESLURM_INVALID_LICENSES": (2048, "Invalid license specification"),
    "ESLURM_ACCOUNTING_POLICY": (
        2050,
        "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)",
    ),
    "ESLURM_INVALID_TIME_LIMIT": (2051, "Requested time limit is invalid (missing or exceeds some limit)"),
    "ESLURM_MISSING_TIME_LIMIT": (8000, "Time limit specification required, but not provided"),
    "ESLURM_HRES_REMOTE_FAIL": (8100, "HRES plugin: the remote service is unavailable"),
    "ESLURM_HRES_MAINTENANCE_DISABLE": (8101, "HRES plugin: maintenance disabled the layers"),
    "ESLURM_HRES_MAINTENANCE_DOWN": (8102, "HRES plugin: maintenance marked the layers down"),
}

# The other numbers of Slurm's ``slurm`` table that job_submit scripts compare with.
NO_VAL = 0xFFFFFFFE
NO_VAL16 = 0xFFFE
NO_VAL64 = 0xFFFFFFFFFFFFFFFE
INFINITE = 0xFFFFFFFF
INFINITE16 = 0xFFFF
CONSTANTS: dict[str, int] = {
    "SUCCESS": SUCCESS,
    "ERROR": ERROR,
    "FAILURE": ERROR,
    "NO_VAL": NO_VAL,
    "NO_VAL16": NO_VAL16,
    "NO_VAL8": 0xFE,
    "INFINITE": INFINITE,
    "INFINITE16": INFINITE16,
    "NICE_OFFSET": 0x80000000,
    **{name: number for name, (number, _) in ESLURM.items()},
}

_MESSAGES = {number: message for number, message in ESLURM.values()}


def strerror(rc: int) -> str:
    """slurm_strerror: what sbatch prints after "Batch job submission failed: "."""
    if rc == ERROR:
        return "Unspecified error"
    return _MESSAGES.get(rc, f"Unknown error {rc}")
