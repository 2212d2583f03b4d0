"""``srun --multi-prog CONF [ARGS...]``: a different program per task (MPMD).

CONF's lines are ``RANKS PROGRAM [ARGUMENTS...]``: RANKS a comma list of task ids and
ranges (``0``, ``1-3,5``) or ``*`` for every task no line named before (the last line
then); ``%t`` in an argument is the task's id, ``%o`` its offset in its range; ``'...'``
keeps spaces; a backslash escapes a character or, at a line's end, continues the line;
``#`` starts a comment line. The ARGS after CONF follow every task's own.

As src/srun/multi_prog.c's ``verify_multi_name`` checks the file (its error lines) and
slurmstepd's ``multi_prog_get_argv`` builds each task's argv; fsched builds them here and
sends each node's agent its tasks' lists, so that no shell and no file on the node is
needed. Without ``-n``, the task count is the highest id named plus one, as srun's.
"""

from __future__ import annotations

MAX_LINE = 256 * 1024  # srun's BUF_SIZE-sized line buffer, generously


class MultiProgError(ValueError):
    """srun's error lines (``srun: error: ...``), several for one refusal."""


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(number, text) of each line that starts a record: a line after one ending in a
    backslash is that record's continuation, as both of Slurm's readers skip it here."""
    out = []
    continued = False
    for number, line in enumerate(text.split("\n"), start=1):
        breaks = line.endswith("\\")
        if not continued:
            out.append((number, line))
        continued = breaks
    return out


def _ranges(ranks: str) -> list[tuple[int, int]] | None:
    out = []
    for part in ranks.split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            return None
        out.append((int(low), int(high) if dash else int(low)))
    return out


def _bad(first: str, number: int, name: str) -> MultiProgError:
    """srun's two lines for a refused record: what is wrong, then where."""
    return MultiProgError(f"{first}\nLine {number} of configuration file {name} invalid")


def task_count(text: str, name: str, ntasks: int | None) -> int:
    """Check CONF as srun's verify_multi_name does; the step's task count."""
    taken: set[int] = set()
    star = False
    count = ntasks
    for number, line in _logical_lines(text):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) < 2:
            raise MultiProgError(f"Line {number} of configuration file {name} invalid")
        ranks = words[0]
        if ranks == "*":
            if count is None:
                raise _bad("Invalid task count -1", number, name)
            star = True
            taken.update(range(count))
            continue
        if star:
            raise _bad("Task range specification with asterisk must be last", number, name)
        spans = _ranges(ranks)
        if spans is None:
            raise _bad(f"Invalid task range specification ({ranks})", number, name)
        for low, high in spans:
            if low > high:
                raise _bad(f"Invalid task range, {low}-{high}", number, name)
            if ntasks is not None and high >= ntasks:
                raise _bad(f"Invalid task id, {high} >= ntasks", number, name)
            for task in range(low, high + 1):
                if task in taken:
                    raise _bad(f"Duplicate record for task {task}", number, name)
                taken.add(task)
            if ntasks is None:
                count = max(count or 0, high + 1)
    if not count:
        raise MultiProgError(f"Configuration file {name} invalid, no record for task id 0")
    for task in range(count):
        if task not in taken:
            raise MultiProgError(f"Configuration file {name} invalid, no record for task id {task}")
    return count


def _arguments(rest: str, following: list[str], task: int, offset: int) -> list[str] | None:
    """slurmstepd's reading of a line's program and arguments (``rest``, with the lines
    it continues into in ``following``); None when a quote is not closed."""
    args: list[str] = []
    buf: str | None = None
    i = 0
    text = rest
    while True:
        if i >= len(text):
            break
        c = text[i]
        if c.isspace():
            if buf is not None:
                args.append(buf)
                buf = None
            while i < len(text) and text[i].isspace():
                i += 1
            continue
        if c == "%":
            code = text[i + 1 : i + 2]
            value = str(task) if code == "t" else str(offset) if code == "o" else ""
            buf = (buf or "") + value
            i += 2
            continue
        if c == "\\":
            if i + 1 < len(text):
                buf = (buf or "") + text[i + 1]
                i += 2
                continue
            if not following:
                break
            text, i = following.pop(0), 0  # the next line continues this argument
            buf = buf if buf is not None else ""
            continue
        if c == "'":
            end = text.find("'", i + 1)
            quoted = text[i + 1 : end if end >= 0 else len(text)]
            while end < 0:
                if not text.endswith("\\") or not following:
                    return None
                text = following.pop(0)
                end = text.find("'")
                quoted += text[: end if end >= 0 else len(text)]
            buf = (buf or "") + quoted
            i = end + 1
            continue
        buf = (buf or "") + c
        i += 1
    if buf is not None:
        args.append(buf)
    return args


def task_argv(text: str, name: str, ntasks: int, extra: list[str]) -> list[list[str]]:
    """Every task's argv, by task id: its line's (the first naming it), then ``extra``."""
    lines = text.split("\n")
    out: list[list[str]] = []
    for task in range(ntasks):
        found = None
        continued = False
        for index, line in enumerate(lines):
            breaks = line.endswith("\\")
            skip, continued = continued, breaks
            stripped = line.lstrip()
            if skip or not stripped or stripped.startswith("#"):
                continue
            parts = stripped.split(None, 1)
            ranks, rest = parts[0], parts[1] if len(parts) > 1 else ""
            offset = _offset(task, ranks)
            if offset is None:
                continue
            found = _arguments(rest.lstrip(), lines[index + 1 :], task, offset)
            if found is None:
                raise MultiProgError(
                    f"Program arguments specification format invalid: line {index + 1} of {name}"
                )
            break
        if not found:
            raise MultiProgError(f"Program for task rank {task} not specified.")
        out.append(found + list(extra))
    return out


def _offset(task: int, ranks: str) -> int | None:
    """The task's place among the tasks ``ranks`` names, in their order (``*``: its id),
    or None when they do not name it (slurmstepd's _in_range)."""
    if ranks == "*":
        return task
    passed = 0
    for low, high in _ranges(ranks) or []:
        if low <= task <= high:
            return passed + task - low
        passed += high - low + 1
    return None


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return f.read(MAX_LINE * 64)
    except OSError:
        raise MultiProgError(f"Unable to open configuration file {path}") from None
