"""Slurm's output conventions on the CLI side: API timestamps, ``(null)``, ``%.10i`` fields.

Everything here is pure (no I/O, no clock) so the formatters are tested on fixed
API-shaped objects.  Durations, sizes and hostlists are Slurm's words the controller
prints too: ``slurmwords.durations``, ``slurmwords.memory``, ``slurmwords.hostlists``.

A format spec is ``%[.|-][width|#]type``: ``.`` right-justifies, otherwise left; a
value longer than the width is cut to the width, as Slurm's ``_print_str`` does; ``#``
asks the caller for a width computed over the rows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable

from slurmwords.durations import format_timestamp

# --------------------------------------------------------------------- times


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
    return format_timestamp(when.astimezone())


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


# ------------------------------------------------------------- arguments


def make_parser(prog: str, **kwargs):  # -> argparse.ArgumentParser (import kept lazy)
    """An argparse parser that speaks Slurm: getopt_long's prefixes, Slurm-worded errors, exit 1.

    A long option may be shortened to any prefix that names one option, as Slurm's
    getopt_long parsing allows (``squeue --job 15``); the aliases of one option
    (``--license``/``--licenses``) are one option, not an ambiguity.
    """
    import argparse  # noqa: PLC0415 - keeps `import cli.fmt` cheap for the formatters
    import re  # noqa: PLC0415

    # sbatch, salloc and srun read whole numbers with slurm_opt.c's parse_int, whose
    # refusal is one line and exit 1, without getopt's "Try --help".
    int_words = kwargs.pop("int_words", False)

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
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.ambiguous: dict[str, list[str]] = {}

        def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
            return super().parse_known_args(self._getopt_values(args), namespace)

        def _getopt_values(self, args):
            """getopt gives an option that takes a value the next word whatever it is
            (``squeue -S -p``, ``sprio -S -y``); argparse refuses a word that starts with
            ``-`` there.  Such a pair becomes the attached form, which argparse reads."""
            if args is None:
                args = sys.argv[1:]
            words, out, i = list(args), [], 0
            stop_at_positional = any(a.nargs == argparse.REMAINDER for a in self._actions)
            while i < len(words):
                word = words[i]
                out.append(word)
                i += 1
                if word == "--" or (stop_at_positional and not word.startswith("-")):
                    out += words[i:]
                    break
                alone = self._optional_value_option(word)
                if alone is not None:
                    # getopt_long's optional_argument takes an attached value only; argparse's
                    # nargs="?" would take the next word (``--exclusive job.sh``).
                    out[-1] = f"{word}={alone.const}" if word.startswith("--") else word + alone.const
                    continue
                action = self._value_option(word)
                if action is None or i == len(words):
                    continue
                value = words[i]
                if value.startswith("-"):
                    out[-1] = f"{word}={value}" if word.startswith("--") else word + value
                else:
                    out.append(value)
                i += 1
            return out

        def _action_of(self, word: str):
            """The action a word given alone names (``-x``, ``--name`` or a prefix of one)."""
            if not word.startswith("-") or "=" in word or word == "-":
                return None
            action = self._option_string_actions.get(word)
            if action is None and word.startswith("--"):
                found = {id(t[0]): t[0] for t in super()._get_option_tuples(word)}
                action = next(iter(found.values())) if len(found) == 1 else None
            return action

        def _optional_value_option(self, word: str):
            """The action of ``word`` if it is an option whose value is optional, alone
            (``--nice``, ``-K``)."""
            if not word.startswith("--") and len(word) > 2 and word.startswith("-"):
                # A cluster of flags ending in one (``-lK``): as getopt, that one alone.
                flags = [self._option_string_actions.get("-" + c) for c in word[1:-1]]
                if not all(a is not None and a.nargs == 0 for a in flags):
                    return None
                word = "-" + word[-1]
            action = self._action_of(word) if word.startswith("--") or len(word) == 2 else None
            if action is None or action.nargs != "?" or not isinstance(action.const, str):
                return None
            return action

        def _value_option(self, word: str):
            """The action of ``word`` if it is an option that takes one value, given apart."""
            action = self._action_of(word)
            if action is None or action.nargs is not None:
                return None
            return action if isinstance(action, argparse._StoreAction | argparse._AppendAction) else None

        def _get_option_tuples(self, option_string: str) -> list:
            unique: dict[int, tuple] = {}
            for match in super()._get_option_tuples(option_string):
                unique.setdefault(id(match[0]), match)
            if len(unique) > 1:
                # argparse would stop here, even on a word meant for the batch script
                # (``sbatch job.sh --c=d``); an ambiguous prefix is reported only if no
                # positional takes the word.
                self.ambiguous[option_string] = [m[1] for m in unique.values()]
                return []
            return list(unique.values())

        def error(self, message: str):  # type: ignore[override]
            bad_int = re.match(r"argument (\S+): invalid int value: '(.*)'$", message, re.DOTALL)
            if bad_int and int_words:
                flags = bad_int.group(1).split("/")
                flag = next((f for f in flags if f.startswith("--")), flags[-1])
                from cli.job_option_checks import numeric_value  # noqa: PLC0415

                sys.stderr.write(f"{self.prog}: error: {numeric_value(bad_int.group(2), flag)}\n")
                raise SystemExit(1)
            if message.startswith("unrecognized arguments:"):
                first = message.split(":", 1)[1].split(maxsplit=1)[0]
                matches = self.ambiguous.get(first)
                if matches:
                    # glibc's getopt_long words it so, and Slurm's commands print what it prints.
                    names = " ".join(f"'{m}'" for m in matches)
                    line = f"{self.prog}: option '{first}' is ambiguous; possibilities: {names}"
                elif not first.startswith("--") and len(first) > 1:
                    line = f"{self.prog}: invalid option -- '{first[1]}'"  # getopt's short form
                else:
                    line = f"{self.prog}: unrecognized option '{first}'"
            elif "ignored explicit argument '" in message:
                # A flag clustered with a letter that is no option (``sprio -nP``): getopt
                # names that letter.
                letter = message.split("ignored explicit argument '", 1)[1][:1]
                line = f"{self.prog}: invalid option -- '{letter}'"
            else:
                line = f"{self.prog}: error: {message}"
            sys.stderr.write(f'{line}\nTry "{self.prog} --help" for more information\n')
            raise SystemExit(1)

    kwargs.setdefault("formatter_class", Formatter)
    return SlurmArgumentParser(prog=prog, **kwargs)


def fold_array_tasks(jobs: list[dict], key: Callable[[dict], object]) -> list[dict]:
    """Rows of one array that share a key (``key`` returns None for a job never folded)
    become one row: the task of the lowest id, with ``_array_fold`` holding the task ids
    folded (``3-9,12``). squeue folds pending tasks by reason and partition, sacct those
    that never started; the rest keep their order."""
    from slurmwords.hostlists import fold_ids  # noqa: PLC0415 - only lists with arrays pay

    groups: dict[object, list[dict]] = {}
    order: list[tuple[bool, object]] = []  # (folded group?, its key or the job)
    for job in jobs:
        k = key(job)
        if k is None:
            order.append((False, job))
            continue
        if k not in groups:
            groups[k] = []
            order.append((True, k))
        groups[k].append(job)
    out = []
    for grouped, item in order:
        tasks = groups[item] if grouped else [item]
        if len(tasks) == 1:
            out.append(tasks[0])
            continue
        first = min(tasks, key=lambda t: int(t["array_task_id"]))
        out.append({**first, "_array_fold": fold_ids(int(t["array_task_id"]) for t in tasks)})
    return out
