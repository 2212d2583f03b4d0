"""Slurm's print_fields tables (src/common/print_fields.c), as sacct and sstat print them."""

from __future__ import annotations

from collections.abc import Iterable


def header_lines(columns: Iterable[tuple[str, int]]) -> str:
    """The names line and the dashes line of a table of ``(name, width)`` columns: a
    negative width is left-justified; the names are cut to the width, without the ``+``
    print_fields_str puts on a cut value."""
    cols = list(columns)
    names = "".join(
        (name[: abs(width)].rjust(abs(width)) if width >= 0 else name[: abs(width)].ljust(abs(width))) + " "
        for name, width in cols
    )
    return names + "\n" + "".join("-" * abs(width) + " " for _name, width in cols) + "\n"
