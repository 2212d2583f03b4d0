"""Parsing of sbatch request fields that the controller validates (pure, no Django).

Each parser raises ValueError with the message sbatch would print after ``error:``.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from typing import Any

MAX_ARRAY_SIZE = 1_000_001  # Slurm's MaxArraySize default is 1001; ours is larger, still bounded
# The largest count a job stores: PostgreSQL's integer, behind every PositiveIntegerField.
MAX_INT32 = 2**31 - 1
# Slurm's job_desc_msg_t holds cpus_per_task in a uint16 (0xfffe is NO_VAL16).
MAX_CPUS_PER_TASK = 0xFFFD
# Slurm's SchedulerParameters=max_script_size default.
MAX_SCRIPT_BYTES = 4 * 1024 * 1024
# What the agent can hand to execve(2) (Linux's ARG_MAX is 2 MiB for argv and environ together).
MAX_EXEC_BYTES = 1024 * 1024
# Digits enough for any bounded count; more is refused before int() reads them.
_MAX_DIGITS = 12

_NODES_RE = re.compile(r"^([0-9]{1,12})(?:-([0-9]{1,12}))?$")
_ARRAY_ITEM_RE = re.compile(r"^([0-9]{1,12})(?:-([0-9]{1,12})(?::([0-9]{1,12}))?)?$")
_COUNT_RE = re.compile(r"[0-9]{1,12}")
_SIGNED_RE = re.compile(r"[+-]?[0-9]+")

# The fields of POST /api/jobs/ (sbatch's request); anything else is refused.
SUBMIT_FIELDS = frozenset(
    {
        "script", "wrap", "argv", "command", "name", "partition", "nodes", "ntasks",
        "cpus_per_task", "mem", "time", "account", "qos", "output", "error", "input",
        "work_dir", "nodelist", "exclude", "hold", "licenses", "gres", "reservation",
        "begin", "array", "requeue", "environment", "test_only", "constraint", "resources",
        "wckey",
        "exclusive", "oversubscribe", "extra", "layout", "nice", "dependency",
        "comment", "open_mode", "time_min", "signal", "mem_per_cpu", "ntasks_per_node", "deadline",
        "get_user_env", "allocation", "mail_type", "mail_user", "alloc_node", "alloc_sid",
        "gpus", "gpus_per_node", "gpus_per_task", "cpus_per_gpu",
    }
)  # fmt: skip


class SpecError(ValueError):
    """A refused request field; ``field`` names it for the API's answer."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def quoted(value: Any, width: int = 40) -> str:
    """A caller's value as a message may show it: printable, and short."""
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: width + 1])
    return text if len(text) <= width else text[: width - 3] + "..."


def check_fields(spec: dict[str, Any], known: frozenset[str] = SUBMIT_FIELDS) -> None:
    """Refuse fields the request does not have: a misspelt ``partiton`` would else be
    dropped without a word and the job run where it was not meant to."""
    for name in spec:
        if name in known:
            continue
        shown = quoted(name)
        close = difflib.get_close_matches(name, known, n=1) if isinstance(name, str) else []
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise SpecError(f"Unknown field: {shown}{hint}", field=shown)


def check_flag(spec: dict[str, Any], name: str, *, default: bool) -> bool:
    """A flag is a JSON boolean: ``"false"`` is a non-empty string, which held the job."""
    value = spec.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise SpecError(f"Invalid {name} value: {quoted(value)} (expected true or false)", field=name)
    return value


def unicode_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored or passed on, or None: a lone surrogate (JSON's
    ``"\\ud800"``) fails to encode in the database driver and in execve."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid Unicode (a lone surrogate)"
    return None


# What no name, path, reason or environment key may hold: control characters (NUL,
# newline, DEL, C1) and lone surrogates. Other Unicode (accents, a zero-width joiner) passes.
_CONTROL = frozenset({"Cc", "Cs"})


def has_control_character(text: str) -> bool:
    """The one character rule of every request value (submission and the other services)."""
    return any(unicodedata.category(ch) in _CONTROL for ch in text)


def check_text(value: Any, field: str, what: str, *, max_len: int, printable: bool = True) -> str:
    """A string field: ``what`` names it as sbatch's messages do (``--output``).

    ``printable`` refuses control characters (paths, names: a NUL in an output path made
    the agent drop the launch); free text (a script) may hold any but NUL, which a Slurm
    script, a C string, cannot hold either.  A number is taken as its decimal text.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise SpecError(f"Invalid {what} specification: expected a string, not {quoted(value)}", field=field)
    if (problem := unicode_problem(value)) is not None:
        raise SpecError(f"Invalid {what} specification: {problem}", field=field)
    if len(value) > max_len:
        raise SpecError(f"Invalid {what} specification: longer than {max_len} characters", field=field)
    if printable and has_control_character(value):
        raise SpecError(f"Invalid {what} specification: {quoted(value)} has a control character", field=field)
    if "\0" in value:
        raise SpecError(f"Invalid {what} specification: it contains a NUL character", field=field)
    return value


def check_strings(value: Any, field: str, *, max_bytes: int) -> list[str]:
    """``argv``: strings execve can pass (no NUL), within ``max_bytes`` together."""
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise SpecError(f"{field} must be a list of strings", field=field)
    total = 0
    for i, arg in enumerate(value):
        if (problem := unicode_problem(arg)) is not None or "\0" in arg:
            raise SpecError(f"Invalid {field}[{i}]: {problem or 'it contains a NUL character'}", field=field)
        total += len(arg) + 1
    if total > max_bytes:
        raise SpecError(f"{field} is larger than {max_bytes} bytes", field=field)
    return value


def check_environment(value: Any, *, max_bytes: int) -> dict[str, str]:
    """``--export``: names execve and the shell accept (no ``=``, no control characters);
    a value may hold any text but NUL, which would end it early."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise SpecError("environment must map strings to strings", field="environment")
    total = 0
    for key, val in value.items():
        if not key or "=" in key or has_control_character(key):
            raise SpecError(f"Invalid environment variable name: {quoted(key)}", field="environment")
        if "\0" in val or unicode_problem(val):
            problem = unicode_problem(val) or "it contains a NUL character"
            raise SpecError(
                f"Invalid value of environment variable {quoted(key)}: {problem}", field="environment"
            )
        total += len(key) + len(val) + 2
    if total > max_bytes:
        raise SpecError(f"environment is larger than {max_bytes} bytes", field="environment")
    return value


def parse_count(value: Any, what: str, *, maximum: int, minimum: int = 1) -> int:
    """A count as sbatch takes it (``--ntasks=4`` or JSON 4), within ``minimum..maximum``."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _COUNT_RE.fullmatch(value.strip()):
        raise ValueError(f"Invalid {what} specification: {quoted(value)}")
    number = int(value.strip())
    if not minimum <= number <= maximum:
        raise ValueError(f"Invalid {what} specification: {quoted(value)} (from {minimum} to {maximum})")
    return number


_GRES_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")


def check_gres(text: str, *, max_count: int = MAX_INT32) -> str:
    """``--gres=gpu[:type][:count][,...]``: a count is a bounded number (``gpu:-1`` was
    taken as a GPU of type ``-1``)."""
    for item in text.split(","):
        parts = item.strip().split(":")
        if parts and _SIGNED_RE.fullmatch(parts[-1]):
            count = parts.pop()
            if not _COUNT_RE.fullmatch(count) or int(count) > max_count:
                raise ValueError(f"Invalid generic resource (gres) specification: {quoted(item)}")
        if not 1 <= len(parts) <= 2 or not all(_GRES_NAME_RE.fullmatch(p) for p in parts):
            raise ValueError(f"Invalid generic resource (gres) specification: {quoted(item)}")
    return text


_LICENSE_RE = re.compile(r"^([A-Za-z0-9_.\-/@]+)(?::(\d+))?$")


def parse_node_count(text: str | int) -> tuple[int, int | None]:
    """``-N 2`` → (2, None); ``-N 2-4`` → (2, 4)."""
    if isinstance(text, bool) or not isinstance(text, str | int):
        raise ValueError(f"Invalid node count specification: {quoted(text)}")
    match = _NODES_RE.match(str(text).strip())
    if not match:
        raise ValueError(f"Invalid node count specification: {quoted(text)}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) else None
    if low < 1 or (high is not None and high < low):
        raise ValueError(f"Invalid node count specification: {quoted(text)}")
    return low, high


def parse_array(
    text: str, *, max_size: int = MAX_ARRAY_SIZE, max_tasks: int | None = None
) -> tuple[list[int], int | None]:
    """``0-15%4`` → ([0..15], 4); ``1,3,5-9:2`` → ([1, 3, 5, 7, 9], None).

    Indexes stay below ``max_size`` (Slurm's MaxArraySize); an array of more than
    ``max_tasks`` tasks is refused from its ranges' sizes, before any is listed.
    """
    bad = ValueError(f"Invalid job array specification: {quoted(text)}")
    spec, _, throttle_text = text.strip().partition("%")
    throttle = None
    if throttle_text:
        if not _COUNT_RE.fullmatch(throttle_text) or int(throttle_text) > MAX_INT32:
            raise bad
        throttle = int(throttle_text)
    ranges: list[range] = []
    for item in spec.split(","):
        match = _ARRAY_ITEM_RE.match(item)
        if not match:
            raise bad
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        step = int(match.group(3)) if match.group(3) else 1
        if high < low or step < 1 or high >= max_size:
            raise bad
        ranges.append(range(low, high + 1, step))
    if max_tasks is not None and sum(len(r) for r in ranges) > max_tasks:
        raise bad
    tasks: set[int] = set()
    for r in ranges:
        tasks.update(r)
    return sorted(tasks), throttle


def parse_licenses(text: str) -> list[tuple[str, int]]:
    """``fluent:2,ansys`` → [("fluent", 2), ("ansys", 1)] (plain licenses; HRES extends this)."""
    out: list[tuple[str, int]] = []
    if not text.strip():
        return out
    for item in text.split(","):
        match = _LICENSE_RE.match(item.strip())
        if not match:
            raise ValueError(f"Invalid license specification: {item}")
        count = int(match.group(2)) if match.group(2) else 1
        out.append((match.group(1), count))
    return out
