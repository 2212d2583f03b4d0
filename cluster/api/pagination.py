from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.pagination import LimitOffsetPagination as _Base
from rest_framework.request import Request

from cluster.services import rows


class LimitOffsetPagination(_Base):
    """Lists page by ``limit``/``offset``; the CLI asks for everything in one page."""

    default_limit = 100
    max_limit = 100_000
    # SQLite's OFFSET is a signed 64-bit integer: ?offset=10**30 overflowed in the driver.
    max_offset = 2**62

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), self.max_offset)


class JobPages(LimitOffsetPagination):
    """The job list's pages (squeue's, and any client polling ``?limit=1``).

    A short page is read in two statements: the ids of the page, then those jobs' rows
    by their ids (``rows.load``, no query compiled).  Compiling the ORM's SELECT of the
    job's eighty columns was most of the CPU of a short page, and the benchmark's poll
    of ``?limit=1`` every 50 ms made it the largest share of the server's request time;
    the ids' query compiles one column.  A long page (the CLI's one page of everything)
    is read as before: there the rows cost more than the compiling."""

    SHORT = 500  # jobs; at most one IN list of the database's bound variables

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> list | None:
        return super().paginate_queryset(_ById(queryset, self.SHORT), request, view)


class _ById:
    """The queryset for the paginator: its count, and a slice read by ids when short."""

    def __init__(self, queryset: QuerySet, short: int) -> None:
        self.queryset, self.short = queryset, short

    def count(self) -> int:
        return self.queryset.count()

    def __getitem__(self, page: slice) -> list:
        if page.stop is None or page.stop - (page.start or 0) > self.short:
            return list(self.queryset[page])
        ids = list(self.queryset.values_list("pk", flat=True)[page])
        found = {row.pk: row for row in rows.load(self.queryset.model, None, {"pk": ids})}
        # In the queryset's order; a job deleted in between (purge) is left out, as the
        # page read a moment later would.
        return [found[i] for i in ids if i in found]
