"""Slurm's debug levels (SlurmctldDebug, ``scontrol setdebug``) as Python's logging levels.

A server process or a Celery worker follows the configuration's SlurmctldDebug once it
has said so (:func:`follow`): the level changes at the next read of a new configuration
(a reconfigure, a ``scontrol setdebug`` from any process). Other processes (the CLI, the
tests, the simulator) keep their own level.
"""

from __future__ import annotations

import logging

from slurmwords.debug_levels import config_level

# Slurm's warning() prints at info, so "error" hides Python's warnings as it hides Slurm's;
# verbose and debug2-5 sit between Python's levels.
PYTHON_LEVELS = {
    "quiet": logging.CRITICAL + 10,
    "fatal": logging.CRITICAL,
    "error": logging.ERROR,
    "info": logging.INFO,
    "verbose": 15,
    "debug": logging.DEBUG,
    "debug2": 9,
    "debug3": 8,
    "debug4": 7,
    "debug5": 6,
}

_following = False


def follow() -> None:
    """This process's root logger follows SlurmctldDebug from now on."""
    global _following  # noqa: PLW0603 - one switch per process, set at its start
    _following = True


def configured(options: dict) -> None:
    """A new configuration was read: apply its SlurmctldDebug if this process follows it
    and the configuration names one (without it, the process keeps FSCHED_LOG_LEVEL's)."""
    if not _following:
        return
    value = options.get("SlurmctldDebug")
    if value in (None, ""):
        return
    try:
        name = config_level(str(value))
    except ValueError:
        return  # refused when the configuration was loaded; never here
    logging.getLogger().setLevel(PYTHON_LEVELS[name])
