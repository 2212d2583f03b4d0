"""The console's Reports page (``/reports/``): a report, its date range and filters, its
charts (plotly, served locally by the power app) and its table, and the table exported as
CSV, JSON or XLSX (``?format=``), exactly the rows shown; the user's scheduled reports,
saved from it, and their rendered files."""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from cluster.exports import FORMATS, table_response
from cluster.services.errors import ServiceError
from cluster.views import console_view
from reports import scheduled, selectors, tables
from reports.models import ReportFile, SavedReport, Schedule
from reports.services import day_start

DEFAULT_DAYS = 7


def _day(text: str, name: str) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{name}: not a date (YYYY-MM-DD): {text!r}") from None


def _window(request: HttpRequest) -> tuple[selectors.Window, date, date]:
    """The range from ``start`` to ``end`` (local days, both included); a week to today."""
    today = timezone.localdate()
    start = _day(request.GET.get("start", ""), "start") or today - timedelta(days=DEFAULT_DAYS)
    end = _day(request.GET.get("end", ""), "end") or today
    if end < start:
        raise ValueError("end: must not be before start")
    tz = timezone.get_current_timezone()
    begin = day_start(datetime.combine(start, time(), tzinfo=tz))
    stop = day_start(datetime.combine(end + timedelta(days=1), time(), tzinfo=tz))
    return selectors.Window(begin, stop), start, end


def _names(request: HttpRequest, name: str) -> list[str]:
    return [n.strip() for n in request.GET.get(name, "").split(",") if n.strip()][:1000]


@console_view
def reports(request: HttpRequest) -> HttpResponse:
    report = request.GET.get("report") or "utilization"
    if report not in tables.REPORTS:
        return HttpResponse(
            f"report: one of {', '.join(tables.REPORTS)}\n", status=400, content_type="text/plain"
        )
    try:
        window, start, end = _window(request)
    except ValueError as exc:
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain")
    users = _names(request, "users")
    if not request.user.is_staff:
        # Someone not staff reports on their own usage (Slurm's PrivateData=usage).
        users = [request.user.get_username()]
    table = tables.build(report, window, accounts=_names(request, "accounts"), users=users)
    fmt = request.GET.get("format")
    if fmt:
        return table_response(fmt, f"{report}-{start}-{end}", table.headers, table.rows)
    query = request.GET.copy()
    query.pop("format", None)
    exports = []
    for name in FORMATS:
        query["format"] = name
        exports.append((name.upper(), query.urlencode()))
    rows = [(table.depth[i] if table.depth else 0, row) for i, row in enumerate(table.rows)]
    return render(
        request,
        "reports/reports.html",
        {
            "nav": "reports",
            "report": report,
            "reports": tables.REPORTS.items(),
            "table": table,
            "rows": rows,
            "charts_json": json.dumps(table.charts),
            "start": start,
            "end": end,
            "accounts": request.GET.get("accounts", ""),
            "users": ",".join(users) if not request.user.is_staff else request.GET.get("users", ""),
            "exports": exports,
            "formats": list(FORMATS),
            "schedules": Schedule.choices,
            "saved": SavedReport.objects.filter(owner=request.user)
            .prefetch_related("files")
            .order_by("-created")[:50],
        },
    )


def _login_or_403(request: HttpRequest) -> HttpResponse | None:
    if not request.user.is_authenticated:
        return HttpResponse("login required\n", status=403, content_type="text/plain")
    return None


@require_POST
def saved_create(request: HttpRequest) -> HttpResponse:
    """Save the report shown with a schedule (the form under the table)."""
    if (denied := _login_or_403(request)) is not None:
        return denied
    p = request.POST
    try:
        scheduled.saved_report_create(
            owner=request.user, report=p.get("report", ""), schedule=p.get("schedule", ""),
            fmt=p.get("format", ""), accounts=p.get("accounts", ""), users=p.get("users", ""),
        )  # fmt: skip
    except ServiceError as exc:
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain")
    messages.success(request, "Report saved: it is rendered after each period ends.")
    return redirect(f"{reverse('reports')}?report={p.get('report', '')}")


@require_POST
def saved_delete(request: HttpRequest, saved_id: int) -> HttpResponse:
    if (denied := _login_or_403(request)) is not None:
        return denied
    try:
        scheduled.saved_report_delete(actor=request.user, saved_id=saved_id)
    except ServiceError as exc:
        return HttpResponse(f"{exc}\n", status=404, content_type="text/plain")
    return redirect(reverse("reports"))


@console_view
def report_file(request: HttpRequest, file_id: int) -> HttpResponse:
    """A rendered scheduled report: its owner's, or any for staff."""
    rendered = ReportFile.objects.select_related("saved").filter(pk=file_id).first()
    if rendered is None or (rendered.saved.owner_id != request.user.pk and not request.user.is_staff):
        raise Http404("no such report file")
    response = HttpResponse(bytes(rendered.content), content_type=FORMATS[rendered.saved.format])
    response["Content-Disposition"] = f'attachment; filename="{rendered.filename}"'
    return response
