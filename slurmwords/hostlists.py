"""Hostlists (``node[01-03,05],gpu1``) folded and expanded with the standard library alone.

The CLI's printers fold the names the API returns and count a job's nodes; ClusterShell
does this too but costs ~25 ms to import, more than half the CLI's start-up budget.  The
controller keeps ClusterShell (``cluster/core/hostlists.py``), which also bounds what a request
may name before expanding it; these helpers trust their input's size.

Folding follows Slurm's printed form: sorted, deduplicated, a prefix's numbers as ranges,
zero padding kept.
"""

from __future__ import annotations

from collections.abc import Iterable


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets: ``a[1,2],b`` -> ``["a[1,2]", "b"]``.

    Lenient (a stray ``]`` closes nothing); callers that must refuse unbalanced brackets
    check them where they read the parts.
    """
    parts: list[str] = []
    depth = start = 0
    for pos, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == sep and depth == 0:
            parts.append(text[start:pos])
            start = pos + 1
    parts.append(text[start:])
    return parts


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


def fold_ordered(names: Iterable[str]) -> str:
    """The names folded in their own order, as Slurm's hostlist prints a list it has not
    sorted (``scontrol show hostlist``): ``node05,node01,node02`` -> ``node[05,01-02]``.
    Neighbours of one prefix and width share a bracket; running numbers become a range."""
    split = [(name, *_split_number(name)) for name in names]
    padded: dict[str, set[int]] = {}
    for _name, prefix, digits in split:
        if len(digits) > 1 and digits[0] == "0":
            padded.setdefault(prefix, set()).add(len(digits))
    runs: list[tuple[str, int, list[list[int]]]] = []  # (prefix, width, [[low, high], ...])
    out: list[str] = []
    for name, prefix, digits in split:
        if not digits:
            runs.append((name, -1, []))
            continue
        # node10 joins node[01-09] (same printed width); node5 does not, as fold_hostlist.
        width = len(digits) if len(digits) in padded.get(prefix, ()) else 0
        number = int(digits)
        if runs and runs[-1][:2] == (prefix, width):
            ranges = runs[-1][2]
            if ranges[-1][1] + 1 == number:
                ranges[-1][1] = number
            else:
                ranges.append([number, number])
        else:
            runs.append((prefix, width, [[number, number]]))
    for prefix, width, ranges in runs:
        if width < 0:
            out.append(prefix)
            continue
        parts = [
            str(low).zfill(width) if low == high else f"{str(low).zfill(width)}-{str(high).zfill(width)}"
            for low, high in ranges
        ]
        single = len(ranges) == 1 and ranges[0][0] == ranges[0][1]
        out.append(prefix + parts[0] if single else f"{prefix}[{','.join(parts)}]")
    return ",".join(out)


def expand_hostlist(expr: str) -> list[str]:
    """``"node[01-03,05],gpu1"`` -> ``["node01", "node02", "node03", "node05", "gpu1"]``.

    ``ValueError("Invalid hostlist: ...")`` on unbalanced brackets or a range that is not
    numbers; empty parts are skipped.
    """
    names: list[str] = []
    for part in split_top(expr or ""):
        if part.strip():
            names.extend(_expand_one(part.strip(), expr))
    return names


def _expand_one(part: str, expr: str) -> list[str]:
    open_at, close_at = part.find("["), part.find("]")
    if open_at < 0 and close_at < 0:
        return [part]
    if not 0 <= open_at < close_at:  # a "]" first, or a "[" never closed
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
