"""Slurm's output conventions on the CLI side: times, sizes, hostlists, ``%.10i`` fields.

Everything here is pure (no I/O, no clock) so the formatters are tested on
fixed API-shaped objects.  Spellings follow Slurm's own printers:

* ``secs2time_short`` is squeue/sinfo's ``_print_secs`` (``0:05``, ``1:02:03``,
  ``1-02:03:04``); ``secs2time_str`` is libslurm's (``00:00:05``) as scontrol prints.
* A format spec is ``%[.|-][width|#]type``: ``.`` right-justifies, otherwise
  left; a value longer than the width is cut to the width, as Slurm's
  ``_print_str`` does; ``#`` asks the caller for a width computed over the rows.
* Hostlists fold ``node01,node02,node03`` into ``node[01-03]``; ClusterShell
  does this too but costs ~25 ms to import, more than half the start-up budget.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable

UNLIMITED = "UNLIMITED"

# --------------------------------------------------------------------- times


def secs2time_short(secs: int | None) -> str:
    """squeue ``%M``/``%L``/``%l`` and sinfo ``%l``: ``0:05``, ``1:02:03``, ``1-02:03:04``."""
    if secs is None:
        return UNLIMITED
    if secs < 0:
        return "INVALID"
    days, rest = divmod(int(secs), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{seconds:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{seconds:02d}"
    return f"{minutes}:{seconds:02d}"


def secs2time_str(secs: int | None) -> str:
    """libslurm's ``secs2time_str`` (scontrol): ``00:00:05``, ``1-02:03:04``."""
    if secs is None:
        return UNLIMITED
    if secs < 0:
        return "INVALID"
    days, rest = divmod(int(secs), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{seconds:02d}"
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}"


def mins2time_str(minutes: int | None, unlimited: str = UNLIMITED) -> str:
    """scontrol's limits in minutes: ``01:00:00``, ``UNLIMITED``."""
    if minutes is None:
        return unlimited
    return secs2time_str(int(minutes) * 60)


def limit_short(minutes: int | None, unlimited: str = UNLIMITED) -> str:
    """squeue ``%l`` (``UNLIMITED``) / sinfo ``%l`` (``infinite``) from minutes."""
    if minutes is None:
        return unlimited
    return secs2time_short(int(minutes) * 60)


def slurm_time(iso: str | None, none: str = "N/A") -> str:
    """An API timestamp (ISO 8601, UTC) as Slurm prints it: local ``2024-01-31T09:45:00``."""
    if not iso:
        return none
    from datetime import UTC, datetime  # noqa: PLC0415 - only formats that print times pay for it

    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone().strftime("%Y-%m-%dT%H:%M:%S")


def mem_str(megabytes: int | None) -> str:
    """A size in MB as Slurm's exact unit conversion prints it: ``500M``, ``4G``, ``0``."""
    if not megabytes:
        return "0"
    value, units = int(megabytes), "MGTP"
    unit = 0
    while value % 1024 == 0 and unit < len(units) - 1:
        value //= 1024
        unit += 1
    return f"{value}{units[unit]}"


def null(value: object, empty: str = "(null)") -> str:
    """Slurm prints unset strings as ``(null)`` in scontrol."""
    if value is None or value in ("", []):
        return empty
    return str(value)


# ------------------------------------------------------------ format specs


class Field:
    """One ``%[.]NNt`` directive of an ``-o`` format.

    A plain slotted class, not a dataclass: ``dataclasses`` imports ``inspect``
    and costs ~10 ms of the 50 ms start-up budget.
    """

    __slots__ = ("auto", "kind", "right", "width")

    def __init__(self, kind: str, width: int = 0, right: bool = False, auto: bool = False) -> None:
        self.kind = kind
        self.width = width
        self.right = right
        self.auto = auto  # "%#P": width = longest value over the rows (sinfo)

    def _key(self) -> tuple[str, int, bool, bool]:
        return (self.kind, self.width, self.right, self.auto)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Field) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Field{self._key()!r}"


def parse_format(spec: str) -> list[Field | str]:
    """Split ``"%.18i %.9P|%j"`` into fields and literal text, in order."""
    tokens: list[Field | str] = []
    literal: list[str] = []
    i, n = 0, len(spec)
    while i < n:
        char = spec[i]
        if char != "%":
            literal.append(char)
            i += 1
            continue
        if i + 1 < n and spec[i + 1] == "%":
            literal.append("%")
            i += 2
            continue
        i += 1
        right = auto = False
        if i < n and spec[i] in ".-":
            right = spec[i] == "."
            i += 1
        if i < n and spec[i] == "#":
            auto = True
            i += 1
        start = i
        while i < n and spec[i].isdigit():
            i += 1
        width = int(spec[start:i]) if i > start else 0
        if i >= n:
            raise ValueError(f"Invalid format specification: {spec}")
        if literal:
            tokens.append("".join(literal))
            literal = []
        tokens.append(Field(spec[i], width, right, auto))
        i += 1
    if literal:
        tokens.append("".join(literal))
    return tokens


def pad(value: str, width: int, right: bool = False, cut: bool = True) -> str:
    """Slurm's ``_print_str``: justify to ``width`` and cut what does not fit."""
    if width <= 0:
        return value
    if right:
        text = value.rjust(width)
        return text[:width] if cut else text
    return (value[:width] if cut else value).ljust(width)


def render(tokens: Iterable[Field | str], value: Callable[[Field], str], widths: dict | None = None) -> str:
    """One output line: each field's value padded per its spec, literals verbatim."""
    out = []
    for token in tokens:
        if isinstance(token, str):
            out.append(token)
            continue
        width = (widths or {}).get(token.kind, token.width) if token.auto else token.width
        out.append(pad(value(token), width, token.right))
    return "".join(out)


# --------------------------------------------------------------- hostlists


def _split_number(name: str) -> tuple[str, str]:
    i = len(name)
    while i and name[i - 1].isdigit():
        i -= 1
    return name[:i], name[i:]


def natural_key(name: str) -> tuple[str, int, str]:
    """Sort ``node2`` before ``node10``."""
    prefix, digits = _split_number(name)
    return (prefix, int(digits) if digits else -1, name)


def _ranges(numbers: list[int], width: int) -> str:
    parts: list[str] = []
    start = prev = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == prev + 1:
            prev = number
            continue
        low, high = str(start).zfill(width), str(prev).zfill(width)
        parts.append(low if start == prev else f"{low}-{high}")
        if number is not None:
            start = prev = number
    return ",".join(parts)


def fold_hostlist(names: Iterable[str]) -> str:
    """``["node01", "node02", "node04"]`` -> ``"node[01-02,04]"`` (sorted, deduplicated)."""
    unique = list(dict.fromkeys(n for n in names if n))
    padded: dict[str, set[int]] = {}
    split = []
    for name in unique:
        prefix, digits = _split_number(name)
        split.append((name, prefix, digits))
        if len(digits) > 1 and digits[0] == "0":
            padded.setdefault(prefix, set()).add(len(digits))
    groups: dict[tuple[str, int], set[int]] = {}
    plain: list[str] = []
    for name, prefix, digits in split:
        if not digits:
            plain.append(name)
            continue
        # node10 joins node[01-09] (same printed width); node5 does not.
        width = len(digits) if len(digits) in padded.get(prefix, ()) else 0
        groups.setdefault((prefix, width), set()).add(int(digits))
    items: list[tuple[tuple[str, int, int], str]] = [((name, -1, 0), name) for name in plain]
    for (prefix, width), numbers in groups.items():
        ordered = sorted(numbers)
        if len(ordered) == 1:
            text = prefix + str(ordered[0]).zfill(width)
        else:
            text = f"{prefix}[{_ranges(ordered, width)}]"
        items.append(((prefix, width, ordered[0]), text))
    return ",".join(text for _key, text in sorted(items))


def _split_top(expr: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in expr:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"Invalid hostlist: {expr}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise ValueError(f"Invalid hostlist: {expr}")
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def expand_hostlist(expr: str) -> list[str]:
    """``"node[01-03,05],gpu1"`` -> ``["node01", "node02", "node03", "node05", "gpu1"]``."""
    names: list[str] = []
    for part in _split_top(expr or ""):
        names.extend(_expand_one(part, expr))
    return names


def _expand_one(part: str, expr: str) -> list[str]:
    open_at = part.find("[")
    if open_at < 0:
        return [part]
    close_at = part.find("]", open_at)
    if close_at < 0:
        raise ValueError(f"Invalid hostlist: {expr}")
    head, body, tail = part[:open_at], part[open_at + 1 : close_at], part[close_at + 1 :]
    tails = _expand_one(tail, expr) if tail else [""]
    out = []
    for item in body.split(","):
        low, _, high = item.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ValueError(f"Invalid hostlist: {expr}")
        width = len(low)
        for number in range(int(low), int(high or low) + 1):
            out.extend(f"{head}{str(number).zfill(width)}{t}" for t in tails)
    return out


def fold_ids(numbers: Iterable[int]) -> str:
    """Array task ids as Slurm prints them: ``[1, 2, 3, 7]`` -> ``1-3,7``."""
    ordered = sorted(set(numbers))
    return _ranges(ordered, 0) if ordered else ""


# ------------------------------------------------------------- arguments


def make_parser(prog: str, **kwargs):  # -> argparse.ArgumentParser (import kept lazy)
    """An argparse parser that speaks Slurm: no prefix matching, Slurm-worded errors, exit 1."""
    import argparse  # noqa: PLC0415 - keeps `import cli.fmt` cheap for the formatters

    # argparse's own formatter calls shutil.get_terminal_size(), and importing
    # shutil (zlib, bz2, lzma) costs several ms on every run: every
    # add_argument() builds a formatter.  The width is measured once.
    try:
        columns = int(os.environ.get("COLUMNS") or os.get_terminal_size(2).columns)
    except (OSError, ValueError):
        columns = 80

    class Formatter(argparse.HelpFormatter):
        def __init__(self, prog: str) -> None:
            super().__init__(prog, width=max(columns - 2, 40), max_help_position=30)

    class SlurmArgumentParser(argparse.ArgumentParser):
        def error(self, message: str):  # type: ignore[override]
            if message.startswith("unrecognized arguments:"):
                first = message.split(":", 1)[1].split(maxsplit=1)[0]
                line = f"{self.prog}: unrecognized option '{first}'"
            else:
                line = f"{self.prog}: error: {message}"
            sys.stderr.write(f'{line}\nTry "{self.prog} --help" for more information\n')
            raise SystemExit(1)

    kwargs.setdefault("formatter_class", Formatter)
    return SlurmArgumentParser(prog=prog, allow_abbrev=False, **kwargs)
