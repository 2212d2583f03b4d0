"""Submission of sbatch's ``--comment``, ``--open-mode``, ``--time-min`` and
``--signal``: checked here, stored in the job's own columns, acted on by the agent
(open mode, signal) and shown by ``scontrol show job`` (Comment=, TimeMin=)."""

from __future__ import annotations

from typing import Any

from cluster.core import jobspec
from slurmwords import job_options

# Request field -> sbatch's option, for the messages.
FIELDS = {"comment": "--comment", "open_mode": "--open-mode", "time_min": "--time-min", "signal": "--signal"}


def checked(spec: dict[str, Any]) -> dict[str, Any]:
    """The fields of the request, parsed; raises ``jobspec.SpecError`` naming the field."""
    out: dict[str, Any] = {}
    for name, what in FIELDS.items():
        value = spec.get(name)
        if value in (None, ""):
            continue
        text = jobspec.check_text(value, name, what, max_len=job_options.MAX_COMMENT)
        try:
            if name == "comment":
                out[name] = text
            elif name == "open_mode":
                out[name] = job_options.parse_open_mode(text)
            elif name == "time_min":
                out[name] = job_options.parse_time_min(text)
                if out[name] > jobspec.MAX_INT32:
                    raise ValueError(f"Invalid time-min specification: {text}")
            else:
                out[name] = str(job_options.parse_signal(text))
        except ValueError as exc:
            raise jobspec.SpecError(str(exc), field=name) from None
    return out


def stored(spec: dict[str, Any], time_limit: int | None) -> dict[str, Any]:
    """The job's columns for the checked request.  A TimeMin above the time limit is
    refused as slurmctld refuses it (ESLURM_INVALID_TIME_MIN_LIMIT)."""
    time_min = spec.get("time_min")
    if time_min is not None and time_limit is not None and time_min > time_limit:
        raise jobspec.SpecError(
            "Invalid time-min specification (exceeds job's time or other limits)", field="time_min"
        )
    return {
        "comment": spec.get("comment", ""),
        "open_mode": spec.get("open_mode", ""),
        "time_min": time_min,
        "signal": spec.get("signal", ""),
    }
