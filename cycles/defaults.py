"""Where a cycle's default interval comes from: slurm.conf, the environment, or fsched's own.

Pure: no Django.  The precedence (docs/cycles.md): an interval edited in the admin wins
until it is reset; below it slurm.conf's value (``SchedulerParameters=sched_interval``,
``bf_interval``), then the environment variable, then fsched's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from slurmwords.option_lists import option_items

SLURM_CONF = "slurm.conf"
ENVIRONMENT = "environment"
DEFAULT = "default"
ADMIN = "admin"


@dataclass(frozen=True)
class Default:
    """A cycle's interval and state when nobody edited its row, and what sets them."""

    seconds: float
    enabled: bool
    source: str
    where: str = ""  # the option or variable that sets it ("" for fsched's default)
    warning: str = ""  # a slurm.conf value that could not be used, and why


def parameter_value(options: Mapping[str, object], parameter: str) -> str | None:
    """The value of ``parameter`` ("SchedulerParameters=sched_interval") in the
    configuration's options, or None when it is not set."""
    option, _, name = parameter.partition("=")
    return option_items(options.get(option)).get(name)


def default_for(
    *,
    interval: float,
    setting: str,
    slurm_parameter: str,
    options: Mapping[str, object],
    environ: Mapping[str, str],
) -> Default:
    """The default of one cycle's row.  ``interval`` is the value of the settings (from
    ``setting`` in ``environ`` or fsched's default)."""
    fallback = Default(interval, True, ENVIRONMENT if setting and setting in environ else DEFAULT, setting)
    if fallback.source == DEFAULT:
        fallback = Default(interval, True, DEFAULT)
    if not slurm_parameter:
        return fallback
    raw = parameter_value(options, slurm_parameter)
    if raw is None:
        return fallback
    try:
        seconds = int(raw)
    except ValueError:
        seconds = 0
    if seconds == -1:
        # Slurm: "-1 disables" the periodic loop (sched_interval, bf_interval); the
        # passes asked for by submissions and completions still run.
        return Default(interval, False, SLURM_CONF, slurm_parameter)
    if seconds < 1:
        return Default(
            fallback.seconds,
            fallback.enabled,
            fallback.source,
            fallback.where,
            warning=f"slurm.conf: {slurm_parameter}={raw}: must be an integer >= 1 or -1; ignored",
        )
    return Default(float(seconds), True, SLURM_CONF, slurm_parameter)
