"""A table as a downloaded file: CSV, JSON or XLSX of exactly the rows a page shows.

Every list and report of the console exports through :func:`table_response`, so the three
formats agree on headers, order and values: the JSON is a list of objects keyed by the
headers, the CSV and the XLSX sheet have the headers as their first row.  Values are written
as given (numbers stay numbers in JSON and XLSX); ``None`` is an empty cell and ``null``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

from django.http import HttpResponse
from openpyxl import Workbook

FORMATS: dict[str, str] = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

Cell = str | int | float | bool | date | None


class UnknownFormat(ValueError):
    """An export format other than those of FORMATS."""


def _plain(value: Any) -> Cell:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


# A cell starting with one of these is a formula to a spreadsheet (CSV injection): a job
# name is the user's text, and an administrator opens the export in a spreadsheet.
_FORMULA = re.compile(r"^[=+\-@\t\r]")


def _spreadsheet_safe(value: Cell) -> Cell:
    if isinstance(value, str) and _FORMULA.match(value):
        return "'" + value
    return value


def _csv_bytes(headers: Sequence[str], rows: Iterable[Sequence[Cell]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    for row in rows:
        writer.writerow(["" if cell is None else _spreadsheet_safe(cell) for cell in row])
    return out.getvalue().encode()


def _json_bytes(headers: Sequence[str], rows: Iterable[Sequence[Cell]]) -> bytes:
    return json.dumps([dict(zip(headers, row, strict=True)) for row in rows], indent=1).encode()


def _xlsx_bytes(headers: Sequence[str], rows: Iterable[Sequence[Cell]], sheet: str) -> bytes:
    book = Workbook(write_only=True)
    ws = book.create_sheet(title=sheet[:31] or "export")
    ws.append(list(headers))
    for row in rows:
        ws.append([_spreadsheet_safe(cell) for cell in row])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def table_bytes(
    fmt: str, headers: Sequence[str], rows: Iterable[Sequence[Any]], *, sheet: str = "export"
) -> bytes:
    """The table in one of FORMATS; :class:`UnknownFormat` for any other."""
    plain = [[_plain(cell) for cell in row] for row in rows]
    if fmt == "csv":
        return _csv_bytes(headers, plain)
    if fmt == "json":
        return _json_bytes(headers, plain)
    if fmt == "xlsx":
        return _xlsx_bytes(headers, plain, sheet)
    raise UnknownFormat(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")


def table_response(
    fmt: str, filename: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]
) -> HttpResponse:
    """A download of the table; a 400 naming the formats for an unknown ``fmt``."""
    try:
        body = table_bytes(fmt, headers, rows, sheet=filename)
    except UnknownFormat as exc:
        return HttpResponse(str(exc) + "\n", status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(body, content_type=FORMATS[fmt])
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", filename) or "export"
    response["Content-Disposition"] = f'attachment; filename="{safe}.{fmt}"'
    return response
