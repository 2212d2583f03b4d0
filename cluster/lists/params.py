"""Query parameters of a console list: page, page size, sort, comma lists.

Pure (no Django): a list module maps what is parsed here to ORM filters.  Bad input raises
:class:`ParamError` naming the parameter, which the views answer with a 400; a page past
the end is not an error but the last page (a list shrinks while it is being read, and the
live refresh must land on a page that exists).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from urllib.parse import urlencode

PER_PAGE_CHOICES = (25, 50, 100, 200, 500)
DEFAULT_PER_PAGE = 100
# Values of one comma list (``user=a,b``): each is a bound variable of one query.
MAX_LIST_VALUES = 1000
MAX_VALUE_LEN = 256


class ParamError(ValueError):
    """A query parameter a list cannot take; ``param`` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


def _printable(value: str, param: str) -> str:
    if not value.isprintable():
        raise ParamError(param, f"Invalid {param}: control characters are not allowed")
    return value


def text(query: Mapping[str, str], param: str, *, max_len: int = MAX_VALUE_LEN) -> str:
    """One stripped text value; empty when absent."""
    value = (query.get(param) or "").strip()
    if len(value) > max_len:
        raise ParamError(param, f"Invalid {param}: longer than {max_len} characters")
    return _printable(value, param)


def comma_list(query: Mapping[str, str], param: str) -> list[str]:
    """``a,b,,c`` -> ``["a", "b", "c"]`` (as squeue's -u/-A/-q/-p take them)."""
    value = text(query, param, max_len=MAX_LIST_VALUES * 65)
    items = [v.strip() for v in value.split(",") if v.strip()]
    if len(items) > MAX_LIST_VALUES:
        raise ParamError(param, f"Too many values for {param}: at most {MAX_LIST_VALUES}")
    return items


def positive_int(query: Mapping[str, str], param: str, default: int) -> int:
    raw = (query.get(param) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18 or int(raw) < 1:
        raise ParamError(param, f"Invalid {param}: {raw[:40]!r} (a whole number from 1)")
    return int(raw)


def per_page(query: Mapping[str, str]) -> int:
    value = positive_int(query, "per_page", DEFAULT_PER_PAGE)
    if value not in PER_PAGE_CHOICES:
        choices = ", ".join(map(str, PER_PAGE_CHOICES))
        raise ParamError("per_page", f"Invalid per_page: {value} (one of {choices})")
    return value


@dataclass(frozen=True)
class Sort:
    """A whitelisted column and its direction; ``key`` is "" for the list's default order."""

    key: str = ""
    descending: bool = False

    @property
    def param(self) -> str:
        if not self.key:
            return ""
        return ("-" if self.descending else "") + self.key


class PagedQuery:
    """What every list's parsed query shares: its GET parameters, the list's own filters
    (``filter_pairs``) first, then the sort, the page size and the page, each left out at
    its default. A subclass is a frozen dataclass with ``sort``, ``page`` and ``per_page``."""

    sort: Sort
    page: int
    per_page: int

    def filter_pairs(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def pairs(self, **changes: object) -> list[tuple[str, str]]:
        """The GET parameters that give this list again (with ``changes`` applied)."""
        q = replace(self, **changes) if changes else self  # type: ignore[type-var]
        pairs = [
            *q.filter_pairs(),
            ("sort", q.sort.param),
            ("per_page", "" if q.per_page == DEFAULT_PER_PAGE else str(q.per_page)),
            ("page", "" if q.page == 1 else str(q.page)),
        ]
        return [(k, v) for k, v in pairs if v]

    def query_string(self, **changes: object) -> str:
        return urlencode(self.pairs(**changes))


def sort(query: Mapping[str, str], allowed: Sequence[str]) -> Sort:
    """``sort=name`` or ``sort=-name``; only the columns in ``allowed``."""
    raw = text(query, "sort", max_len=64)
    if not raw:
        return Sort()
    key = raw.removeprefix("-")
    if key not in allowed:
        raise ParamError("sort", f"Invalid sort field: {raw!r} (one of {', '.join(allowed)})")
    return Sort(key, raw.startswith("-"))


@dataclass(frozen=True)
class PageSpan:
    """Where a page sits in a list of ``total`` rows."""

    number: int
    per_page: int
    total: int

    @property
    def num_pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.per_page

    @property
    def first_row(self) -> int:
        return self.offset + 1 if self.total else 0

    @property
    def last_row(self) -> int:
        return min(self.total, self.offset + self.per_page)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.num_pages

    def window(self, around: int = 2) -> list[int | None]:
        """Page numbers to link: the first, the last, and ``around`` either side of this
        one; ``None`` where pages are skipped."""
        last = self.num_pages
        keep = {1, last, *range(max(1, self.number - around), min(last, self.number + around) + 1)}
        out: list[int | None] = []
        previous = 0
        for n in sorted(keep):
            if n - previous > 1:
                out.append(None)
            out.append(n)
            previous = n
        return out


def page_span(requested: int, per_page: int, total: int) -> PageSpan:
    """The page asked for, or the last page when it asks past the end."""
    last = max(1, math.ceil(total / per_page))
    return PageSpan(min(requested, last), per_page, total)


def timestamp(query: Mapping[str, str], param: str) -> datetime | None:
    """``2026-12-01`` or ``2026-12-01T08:30[:00]`` (sacct's -S/-E forms); naive, in the
    site's time zone, for the caller to make aware."""
    raw = text(query, param, max_len=32)
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise ParamError(param, f"Invalid {param}: {raw!r} (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS)") from None
    return value.replace(tzinfo=None) if value.tzinfo is None else value
