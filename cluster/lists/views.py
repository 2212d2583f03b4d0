"""The console's list pages: each is a page, its table fragment (the live refresh and the
filter form fetch it) and an export of the whole filtered list.

A parameter the list cannot take is answered with a 400 that names it, the page and the
fragment showing the message where the table would be; a page past the end shows the last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from cluster import exports, selectors
from cluster.core.states import JobState
from cluster.lists import audit as audit_list
from cluster.lists import events as event_list
from cluster.lists import jobs as job_list
from cluster.lists import nodes as node_list
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


def _unknown_format(fmt: str) -> HttpResponse | None:
    if fmt in exports.FORMATS:
        return None
    return _bad(f"Invalid format: {fmt[:20]!r} (one of {', '.join(exports.FORMATS)})")


def _export_links(name: str, query: str) -> list[tuple[str, str]]:
    """Each export format and its URL, for the list's parameters ``query`` (no page)."""
    return [
        (fmt, _url(name, f"{query}&format={fmt}" if query else f"format={fmt}")) for fmt in exports.FORMATS
    ]


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

    return {
        "query": shown,
        "page": page,
        "headers": sort_headers(JOB_COLUMNS, shown.sort, url),
        "pages": page_links(page.span, url),
        "table_url": _url("job-table", qs),
        "page_query": qs,
        "jobs_url": reverse("jobs"),
        "exports": _export_links("job-export", shown.filter_string()),
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
    if (refused := _unknown_format(fmt)) is not None:
        return refused
    rows = job_list.job_export_rows(request.user, query, now=timezone.now())
    return exports.table_response(fmt, "jobs", job_list.HEADERS, rows)


# --- the lists of plain cells: events, the audit log, the node table --------------------------


@dataclass(frozen=True)
class CellList:
    """A list page of plain cells (cluster.lists.table): its names, parameters and rows."""

    page: str  # URL names: the page, its table fragment, its export
    table: str
    export: str
    template: str  # the page's template (the fragment is console/_list_table.html)
    title: str
    nav: str
    columns: tuple[tuple[str, str, str], ...]
    headers: tuple[str, ...]
    parse: Callable[[Any], Any]
    rows: Callable[[Any, Any], tuple[list[Any], Any]]
    export_rows: Callable[[Any, Any], Iterable[list[object]]]
    staff_only: bool = False
    # The page's URL keeps a parameter that selects the list (the node table: view=table).
    page_query: str = ""


def _cell_context(request: HttpRequest, spec: CellList) -> tuple[dict[str, Any], int]:
    base = {"title": spec.title, "table_id": f"{spec.page}-table", "item": spec.title.lower()}
    try:
        query = spec.parse(request.GET)
    except ParamError as exc:
        return {
            **base,
            "error": str(exc),
            "query": None,
            "table_url": _url(spec.table, request.GET.urlencode()),
        }, 400
    rows, span = spec.rows(request.user, query)
    shown = query if span.number == query.page else replace(query, page=span.number)

    def url(**changes: Any) -> tuple[str, str]:
        q = shown.query_string(**changes)
        return _url(spec.page, q), _url(spec.table, q)

    return {
        **base,
        "query": shown,
        "rows": rows,
        "span": span,
        "headers": sort_headers(spec.columns, shown.sort, url),
        "pages": page_links(span, url),
        "table_url": _url(spec.table, shown.query_string()),
        "page_query": shown.query_string(),
        "exports": _export_links(spec.export, shown.query_string(page=1)),
    }, 200


def _forbidden(request: HttpRequest, spec: CellList) -> HttpResponse | None:
    if spec.staff_only and not request.user.is_staff:
        return HttpResponse(
            f"The {spec.title.lower()} is for staff only.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return None


def cell_page(spec: CellList, request: HttpRequest, **extra: Any) -> HttpResponse:
    if (refused := _forbidden(request, spec)) is not None:
        return refused
    context, status = _cell_context(request, spec)
    context.update(nav=spec.nav, per_page_choices=PER_PAGE_CHOICES, **extra)
    return render(request, spec.template, context, status=status)


def cell_table(spec: CellList, request: HttpRequest) -> HttpResponse:
    if (refused := _forbidden(request, spec)) is not None:
        return refused
    context, status = _cell_context(request, spec)
    response = render(request, "console/_list_table.html", context, status=status)
    return replace_address(request, response, spec.page, context["page_query"]) if status == 200 else response


def cell_export(spec: CellList, request: HttpRequest) -> HttpResponse:
    if (refused := _forbidden(request, spec)) is not None:
        return refused
    fmt = export_format(request)
    if (refused := _unknown_format(fmt)) is not None:
        return refused
    try:
        query = spec.parse(request.GET)
    except ParamError as exc:
        return _bad(str(exc))
    return exports.table_response(fmt, spec.page, spec.headers, spec.export_rows(request.user, query))


EVENTS = CellList(
    page="event-list",
    table="event-table",
    export="event-export",
    template="console/event_list.html",
    title="Events",
    nav="events",
    columns=event_list.COLUMNS,
    headers=event_list.HEADERS,
    parse=event_list.parse,
    rows=event_list.event_page,
    export_rows=event_list.export_rows,
)
AUDIT = CellList(
    page="audit",
    table="audit-table",
    export="audit-export",
    template="console/audit.html",
    title="Audit log",
    nav="audit",
    columns=audit_list.COLUMNS,
    headers=audit_list.HEADERS,
    parse=audit_list.parse,
    rows=audit_list.audit_page,
    export_rows=audit_list.export_rows,
    staff_only=True,
)
NODES = CellList(
    page="nodes",
    table="node-table",
    export="node-export",
    template="console/node_table.html",
    title="Nodes",
    nav="nodes",
    columns=node_list.COLUMNS,
    headers=node_list.HEADERS,
    parse=node_list.parse,
    rows=node_list.node_page,
    export_rows=node_list.export_rows,
)


@console_view
def events(request: HttpRequest) -> HttpResponse:
    return cell_page(EVENTS, request, kinds=event_list.KINDS)


@console_view
def event_table(request: HttpRequest) -> HttpResponse:
    return cell_table(EVENTS, request)


@console_view
def event_export(request: HttpRequest) -> HttpResponse:
    return cell_export(EVENTS, request)


@console_view
def audit(request: HttpRequest) -> HttpResponse:
    models = (
        list(
            audit_list.LogEntry.objects.order_by()
            .values_list("content_type__app_label", "content_type__model")
            .distinct()
        )
        if request.user.is_staff
        else []
    )
    return cell_page(
        AUDIT, request, models=sorted(f"{a}.{m}" for a, m in models), actions=list(audit_list.ACTIONS)
    )


@console_view
def audit_table(request: HttpRequest) -> HttpResponse:
    return cell_table(AUDIT, request)


@console_view
def audit_export(request: HttpRequest) -> HttpResponse:
    return cell_export(AUDIT, request)


def node_table_page(request: HttpRequest) -> HttpResponse:
    """/nodes/?view=table (the grid's page answers it through this)."""
    return cell_page(NODES, request, partitions=selectors.partition_names(), colours=selectors.NODE_COLOURS)


@console_view
def node_table(request: HttpRequest) -> HttpResponse:
    return cell_table(NODES, request)


@console_view
def node_export(request: HttpRequest) -> HttpResponse:
    return cell_export(NODES, request)
