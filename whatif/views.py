"""The console's What-if page (``/whatif/``, administrators): a comparison of two
configurations on one workload, asked for in a form, followed with progress bars, and
shown side by side with the differences marked (docs/whatif.md)."""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from cluster.services.errors import ServiceError
from whatif import runner, services
from whatif.comparison import comparison
from whatif.core.offer import offers
from whatif.models import WhatIf
from whatif.snapshot import texts

GROUPS = (("power", "Power saving (slurm.conf)"), ("layers", "HRES layer counts (resources.yaml)"))


def staff_view(view: Any) -> Any:
    """Login required (the login page otherwise), administrators only (403)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect(f"/login/?next={request.path}")
        if not request.user.is_staff:
            return HttpResponse(
                "What-if simulations are for administrators.\n", status=403, content_type="text/plain"
            )
        return view(request, *args, **kwargs)

    return wrapper


@require_safe
@staff_view
def whatif_list(request: HttpRequest) -> HttpResponse:
    runner.requeue_stale()
    rows = WhatIf.objects.defer("files_a", "files_b", "workload_text", "report_a", "report_b")[:100]
    return render(request, "whatif/list.html", {"nav": "whatif", "rows": rows})


def _form_context(base: str, posted: dict[str, str] | None = None) -> dict[str, Any]:
    files = texts(services.base_files(base))
    fields = offers(files)
    posted = posted or {}
    for_group: dict[str, list] = {}
    for f in fields:
        for_group.setdefault(f.group, []).append((f, posted.get(f.key, f.value)))
    tables = {}
    for group in ("qos", "accounts"):
        rows: dict[str, list] = {}
        columns: list[str] = []
        for f, value in for_group.get(group, []):
            rows.setdefault(f.row, []).append((f, value))
            if f.column not in columns:
                columns.append(f.column)
        tables[group] = (columns, rows)
    saved = WhatIf.objects.exclude(name="").order_by("name").values_list("name", flat=True)
    return {
        "nav": "whatif",
        "base": base,
        "saved": list(saved),
        "groups": [(key, label, for_group.get(key, [])) for key, label in GROUPS],
        "qos_table": tables["qos"],
        "account_table": tables["accounts"],
        "sample": runner.SAMPLE.is_file(),
    }


@require_http_methods(["GET", "HEAD", "POST"])
@staff_view
def whatif_new(request: HttpRequest) -> HttpResponse:
    base = (request.POST if request.method == "POST" else request.GET).get("base") or "current"
    if request.method == "POST":
        upload = request.FILES.get("upload")
        try:
            row = services.whatif_create(
                actor=request.user,
                base=base,
                posted={
                    k: v for k, v in request.POST.items() if k.startswith(("power.", "layer.", "limit."))
                },
                workload=request.POST.get("workload", ""),
                days=request.POST.get("days", "7"),
                upload_name=upload.name if upload else "",
                upload=upload.read(services.MAX_UPLOAD + 1) if upload else None,
                name=request.POST.get("name", ""),
            )
        except ServiceError as exc:
            try:
                context = _form_context(base, dict(request.POST.items()))
            except ServiceError:
                context = _form_context("current")
            context.update(error=str(exc), posted=request.POST)
            return render(request, "whatif/new.html", context, status=exc.status)
        return redirect("whatif-detail", pk=row.pk)
    try:
        context = _form_context(base)
    except ServiceError as exc:
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain")
    return render(request, "whatif/new.html", context)


def _detail_context(row: WhatIf) -> dict[str, Any]:
    return {
        "nav": "whatif",
        "row": row,
        **comparison(row.report_a if row.state == WhatIf.DONE else None, row.report_b),
        "progress": [(side.upper(), (row.progress or {}).get(side) or {}) for side in ("a", "b")],
    }


@require_safe
@staff_view
def whatif_detail(request: HttpRequest, pk: int) -> HttpResponse:
    row = get_object_or_404(WhatIf, pk=pk)
    return render(request, "whatif/detail.html", _detail_context(row))


@require_safe
@staff_view
def whatif_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The progress fragment the detail page polls while the simulations run; once they
    have ended it answers with the whole result (htmx replaces the section)."""
    row = get_object_or_404(WhatIf, pk=pk)
    return render(request, "whatif/_status.html", _detail_context(row))


@require_safe
@staff_view
def whatif_report(request: HttpRequest, pk: int, side: str) -> HttpResponse:
    """A side's own report.html, as the simulator wrote it (self-contained, offline)."""
    row = get_object_or_404(WhatIf, pk=pk)
    if side not in ("a", "b") or row.state != WhatIf.DONE:
        raise Http404("no such report")
    path = runner.work_dir(row.pk) / side / "out" / "report.html"
    if not path.is_file():
        raise Http404("the report's file is gone")
    response = FileResponse(path.open("rb"), content_type="text/html; charset=utf-8")
    # A sandbox of its own origin: the report's scripts draw its charts and can reach
    # neither the console's cookies nor its API.
    response["Content-Security-Policy"] = "sandbox allow-scripts; default-src 'self' 'unsafe-inline' data:"
    return response
