"""sbatch options that the controller stores and the agent acts on: ``--comment``,
``--open-mode``, ``--time-min``, ``--signal`` and ``--get-user-env`` (pure: no I/O, no
Django).

Each parser raises ValueError with the text sbatch prints after ``error:``; the CLI,
the controller and the agent share them, so a value the CLI accepted means the same
thing on the node.
"""

from __future__ import annotations

import re
import signal as _signal
from dataclasses import dataclass

from slurmwords import durations

# Slurm keeps a job's comment in a string with no length limit of its own; the column
# bounds it here.
MAX_COMMENT = 1024

OPEN_MODES = ("append", "truncate")

# sbatch(1) --signal: "sig_time ... between 0 and 65535", default 60 seconds.
DEFAULT_SIGNAL_TIME = 60
MAX_SIGNAL_TIME = 0xFFFF

_SIGNAL_RE = re.compile(r"^(?:([A-Za-z]+):)?([A-Za-z0-9+]+)(?:@([0-9]{1,6}))?$")


def parse_open_mode(text: str) -> str:
    """``--open-mode``: as sbatch, only the first letter counts (``a``/``A`` append,
    ``t``/``T`` truncate); the stored form is the full word."""
    first = text.strip()[:1].lower()
    for mode in OPEN_MODES:
        if first and mode.startswith(first):
            return mode
    raise ValueError(f"Invalid --open-mode argument: {text}. Ignored")


def parse_time_min(text: str) -> int:
    """``--time-min``: minutes, in any of ``--time``'s forms; no INFINITE (a minimum
    time limit has to be a time)."""
    try:
        minutes = durations.parse_time_limit(text)
    except ValueError:
        minutes = None
    if minutes is None or minutes < 0:
        raise ValueError(f"Invalid time-min specification: {text}")
    return minutes


@dataclass(frozen=True)
class SignalSpec:
    """``--signal=[{R|B}:]<sig_num>[@sig_time]``."""

    number: int
    seconds: int = DEFAULT_SIGNAL_TIME
    batch_only: bool = False  # B: the batch shell alone
    reservation: bool = False  # R: also when a reservation ends (stored, shown)

    def __str__(self) -> str:
        flags = ("R" if self.reservation else "") + ("B" if self.batch_only else "")
        head = f"{flags}:" if flags else ""
        return f"{head}{self.number}@{self.seconds}"


def signal_number(name: str) -> int:
    """``USR1``, ``SIGUSR1`` or ``10`` → 10, as Slurm's sig_name2num; 0 when unknown."""
    word = name.strip().upper()
    if word.isdigit():
        number = int(word)
        return number if 0 < number < _signal.NSIG else 0
    if not word.startswith("SIG"):
        word = "SIG" + word
    try:
        return int(_signal.Signals[word])
    except KeyError:
        return 0


def parse_signal(text: str) -> SignalSpec:
    """``--signal``'s value, refused with sbatch's message."""
    bad = ValueError(f"Invalid --signal specification: {text}")
    match = _SIGNAL_RE.match(text.strip())
    if not match:
        raise bad
    flags, name, seconds_text = match.groups()
    flags = (flags or "").upper()
    if flags and (set(flags) - {"R", "B"} or len(set(flags)) != len(flags)):
        raise bad
    number = signal_number(name)
    if not number:
        raise bad
    seconds = DEFAULT_SIGNAL_TIME if seconds_text is None else int(seconds_text)
    if seconds > MAX_SIGNAL_TIME:
        raise bad
    return SignalSpec(number=number, seconds=seconds, batch_only="B" in flags, reservation="R" in flags)


# sbatch(1) --get-user-env[=timeout][mode]: 8 seconds unless given; L (a login shell, su -)
# unless S (a plain shell).
DEFAULT_USER_ENV_TIMEOUT = 8
_USER_ENV_RE = re.compile(r"^([0-9]{0,5})([SLsl]?)$")


def parse_get_user_env(text: str) -> tuple[int, str]:
    """``--get-user-env``'s value (``""``, ``10``, ``S``, ``10L``) as (seconds, mode)."""
    match = _USER_ENV_RE.match(text.strip())
    if not match:
        raise ValueError(f"Invalid --get-user-env specification: {text}")
    seconds = int(match.group(1)) if match.group(1) else DEFAULT_USER_ENV_TIMEOUT
    if seconds < 1:
        raise ValueError(f"Invalid --get-user-env specification: {text}")
    return seconds, (match.group(2) or "L").upper()
