"""The console's list pages: each is a page, its table fragment (the live refresh and the
filter form fetch it) and an export of the whole filtered list.

A parameter the list cannot take is answered with a 400 that names it, the page and the
fragment showing the message where the table would be; a page past the end shows the last.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from cluster import exports, selectors
from cluster.core.states import JobState
from cluster.lists import jobs as job_list
from cluster.lists.links import page_links, sort_headers
from cluster.lists.params import PER_PAGE_CHOICES, ParamError
from cluster.views import console_view

JOB_COLUMNS = (
    ("id", "JOBID", "num"),
    ("name", "NAME", ""),
    ("user", "USER", ""),
    ("account", "ACCOUNT", ""),
    ("qos", "QOS", ""),
    ("partition", "PARTITION", ""),
    ("state", "STATE", ""),
    ("time", "TIME", "num"),
    ("nodes", "NODES", "num"),
    ("reason", "NODELIST(REASON)", ""),
)


def _url(name: str, query: str) -> str:
    url = reverse(name)
    return f"{url}?{query}" if query else url


def replace_address(request: HttpRequest, response: HttpResponse, page: str, query: str) -> HttpResponse:
    """A fragment fetched from its own page keeps the address bar (and so a reload or a
    shared link) on that page with the same parameters."""
    current = getattr(request, "htmx", None) and request.htmx.current_url_abs_path
    if current and current.split("?")[0] == reverse(page):
        response["HX-Replace-Url"] = _url(page, query)
    return response


def export_format(request: HttpRequest) -> str:
    return (request.GET.get("format") or "csv").strip().lower()


def _bad(message: str) -> HttpResponse:
    return HttpResponse(message + "\n", status=400, content_type="text/plain; charset=utf-8")


# --- jobs ------------------------------------------------------------------------------------


def _job_context(request: HttpRequest) -> tuple[dict[str, Any], int]:
    try:
        query = job_list.parse(request.GET)
    except ParamError as exc:
        bad_query = request.GET.urlencode()
        return {
            "error": str(exc),
            "query": job_list.JobQuery(),
            "table_url": _url("job-table", bad_query),
            "page_query": bad_query,
        }, 400
    page = job_list.job_page(request.user, query, now=timezone.now())
    shown = query if page.span.number == query.page else replace(query, page=page.span.number)
    qs = shown.query_string()

    def url(**changes: Any) -> tuple[str, str]:
        q = shown.query_string(**changes)
        return _url("jobs", q), _url("job-table", q)

    export = shown.filter_string()
    return {
        "query": shown,
        "page": page,
        "headers": sort_headers(JOB_COLUMNS, shown.sort, url),
        "pages": page_links(page.span, url),
        "table_url": _url("job-table", qs),
        "page_query": qs,
        "jobs_url": reverse("jobs"),
        "exports": [
            (fmt, _url("job-export", f"{export}&format={fmt}" if export else f"format={fmt}"))
            for fmt in exports.FORMATS
        ],
        # A folded row links to the list with its array's tasks one per row, and back.
        "rows": [
            (row, url(expand=(*shown.expand, row.array_job_id)) if row.folded else None) for row in page.rows
        ],
        "expanded": [(a, url(expand=tuple(x for x in shown.expand if x != a))) for a in shown.expand],
    }, 200


@console_view
def jobs(request: HttpRequest) -> HttpResponse:
    context, status = _job_context(request)
    context.update(
        nav="jobs",
        partitions=selectors.partition_names(),
        state_choices=[s.value for s in JobState],
        per_page_choices=PER_PAGE_CHOICES,
    )
    return render(request, "console/jobs.html", context, status=status)


@console_view
def job_table(request: HttpRequest) -> HttpResponse:
    context, status = _job_context(request)
    response = render(request, "console/_job_table.html", context, status=status)
    return replace_address(request, response, "jobs", context["page_query"]) if status == 200 else response


@console_view
def job_export(request: HttpRequest) -> HttpResponse:
    try:
        query = job_list.parse(request.GET)
    except ParamError as exc:
        return _bad(str(exc))
    fmt = export_format(request)
    if fmt not in exports.FORMATS:
        return _bad(f"Invalid format: {fmt[:20]!r} (one of {', '.join(exports.FORMATS)})")
    rows = job_list.job_export_rows(request.user, query, now=timezone.now())
    return exports.table_response(fmt, "jobs", job_list.HEADERS, rows)
