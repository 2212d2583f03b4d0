"""The console: server-rendered pages and the fragments that keep them live.

Every page is made of fragments (``templates/console/_*.html``).  A page includes them;
a fragment URL (``/nodes/_grid``, ``/jobs/_table``, ...) renders the same template alone,
so the first render and every refresh come from one template.  A fragment's root element
carries ``data-live-topic`` and ``hx-get`` (its own URL with the page's filters):
``static/js/live.js`` re-fetches it when the websocket says one of its topics changed, or
every few seconds while the websocket is down.

The dashboard is the exception: its body comes whole from the one publisher of the server
process (cluster/overview_publisher.py), so that open browsers do not multiply its reads.

Read only: every view is GET (HEAD) only and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe
from django_htmx.http import HttpResponseClientRedirect

from cluster import explainer, extensions, job_page_usage, overview_publisher, selectors, visibility
from cluster.models import ClusterConfig, Job

View = Callable[..., HttpResponse]


def console_view(view: View) -> View:
    """Login required, GET/HEAD only.

    A full page goes to the admin login.  A fragment request (htmx) gets an ``HX-Redirect``
    to the login page for the *page* it came from, so an expired session never swaps a
    login form into a tile grid.
    """

    @require_safe
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            if getattr(request, "htmx", False):
                page = request.htmx.current_url_abs_path or reverse("home")
                login = redirect_to_login(page)
                return HttpResponseClientRedirect(login["Location"])
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


def _with_query(name: str, query: str, **kwargs: Any) -> str:
    url = reverse(name, kwargs=kwargs or None)
    return f"{url}?{query}" if query else url


def _cluster_name() -> str:
    return ClusterConfig.objects.values_list("cluster_name", flat=True).first() or "cluster"


# --- context builders, one per fragment: shared by the page and the fragment view -------


def _grid_context(request: HttpRequest, *, compact: bool = False) -> dict[str, Any]:
    """The node grid and the per-state counts above it (the page renders both from one read)."""
    partition = request.GET.get("partition", "").strip()
    grouped = request.GET.get("group", "") == "partition"
    tiles = _tiles(request, partition)
    groups = (
        selectors.group_by_partition(tiles) if grouped else [selectors.TileGroup("", tiles)] if tiles else []
    )
    query = request.GET.urlencode()
    counts_query = urlencode({"partition": partition}) if partition else ""
    return {
        "groups": groups,
        "grouped": grouped,
        "partition": partition,
        "compact": compact,
        "nodes_url": reverse("nodes"),
        "grid_url": _with_query("dashboard-grid" if compact else "node-grid", query),
        **_counts_context(tiles, counts_query),
    }


def _tiles(request: HttpRequest, partition: str) -> list[selectors.NodeTile]:
    # PrivateData=nodes: no node state for regular users (the slurm.conf man page).
    return [] if visibility.hides(request.user, "nodes") else selectors.node_tiles(partition=partition)


def _counts_context(tiles: list[selectors.NodeTile], query: str) -> dict[str, Any]:
    return {
        "node_counts": selectors.node_state_counts(tiles),
        "node_total": len(tiles),
        "counts_url": _with_query("node-counts", query),
    }


def _summary_context(request: HttpRequest) -> dict[str, Any]:
    visible = visibility.visible_jobs(request.user)
    return {
        "job_counts": selectors.job_state_counts(now=timezone.now(), visible=visible),
        "pending_reasons": selectors.pending_reasons(visible=visible),
    }


def _events_context(request: HttpRequest) -> dict[str, Any]:
    return {"events": selectors.recent_events(limit=25, visible=visibility.visible_jobs(request.user))}


# --- pages ---------------------------------------------------------------------------------


@console_view
def dashboard(request: HttpRequest) -> HttpResponse:
    # The first render reads; every update after it comes from the shared publisher.
    shown = overview_publisher.context(hidden=overview_publisher.audience(request.user))
    context = {"nav": "dashboard", "cluster_name": _cluster_name(), **shown}
    return render(request, "console/dashboard.html", context)


@console_view
def dashboard_grid(request: HttpRequest) -> HttpResponse:
    return render(request, "console/_node_grid.html", _grid_context(request, compact=True))


@console_view
def job_summary(request: HttpRequest) -> HttpResponse:
    return render(request, "console/_job_summary.html", _summary_context(request))


@console_view
def events(request: HttpRequest) -> HttpResponse:
    return render(request, "console/_events.html", _events_context(request))


@console_view
def nodes(request: HttpRequest) -> HttpResponse:
    if request.GET.get("view") == "table":
        from cluster.lists.views import node_table_page  # noqa: PLC0415 - it imports this module

        return node_table_page(request)
    context = {
        "nav": "nodes",
        "partitions": selectors.partition_names(),
        "colours": selectors.NODE_COLOURS,
        "suffixes": selectors.suffix_legend(),
        **_grid_context(request),
    }
    return render(request, "console/nodes.html", context)


@console_view
def node_counts(request: HttpRequest) -> HttpResponse:
    partition = request.GET.get("partition", "").strip()
    tiles = _tiles(request, partition)
    query = urlencode({"partition": partition}) if partition else ""
    return render(request, "console/_node_counts.html", _counts_context(tiles, query))


@console_view
def node_grid(request: HttpRequest) -> HttpResponse:
    return render(request, "console/_node_grid.html", _grid_context(request))


def _node_context(request: HttpRequest, name: str) -> dict[str, Any]:
    hidden = visibility.hides(request.user, "nodes")
    detail = (
        None
        if hidden
        else selectors.node_detail(name, now=timezone.now(), visible=visibility.visible_jobs(request.user))
    )
    if detail is None:
        raise Http404(f"Node {name} not found")
    return {
        "node": detail,
        "jobs_url": reverse("jobs"),
        "body_url": reverse("node-body", kwargs={"name": name}),
    }


@console_view
def node(request: HttpRequest, name: str) -> HttpResponse:
    # The extensions' sections sit below the live body: each keeps itself current.
    sections = extensions.node_page_sections(name)
    context = {"nav": "nodes", "sections": sections, **_node_context(request, name)}
    return render(request, "console/node_detail.html", context)


@console_view
def node_body(request: HttpRequest, name: str) -> HttpResponse:
    return render(request, "console/_node_body.html", _node_context(request, name))


def _job_context(request: HttpRequest, job_id: int) -> dict[str, Any]:
    detail = selectors.job_detail(
        job_id,
        now=timezone.now(),
        visible=visibility.visible_jobs(request.user),
        private=visibility.manageable_jobs(request.user),
    )
    if detail is None:
        raise Http404(f"Invalid job id specified: {job_id}")
    return {
        "job": detail,
        "body_url": reverse("job-body", kwargs={"job_id": job_id}),
        "why": _why_pending(job_id) if detail.row.pending else None,
        "efficiency": job_page_usage.finished_efficiency(
            request.user, job_id, detail.row.state, timezone.now()
        ),
        **_usage_context(request, job_id, detail.row.state),
    }


def _usage_context(request: HttpRequest, job_id: int, state: str) -> dict[str, Any]:
    # A job that may yet run keeps its (empty) panel live: its first report fills it in.
    return {
        "usage": job_page_usage.running_usage(request.user, job_id, state),
        "usage_topic": job_page_usage.live_topic(job_id, state),
        "usage_url": reverse("job-usage", kwargs={"job_id": job_id}),
    }


def _why_pending(job_id: int) -> explainer.Explanation | None:
    job = Job.objects.filter(pk=job_id).first()
    return None if job is None else explainer.explain(job, now=timezone.now())


@console_view
def job(request: HttpRequest, job_id: int) -> HttpResponse:
    return render(request, "console/job_detail.html", {"nav": "jobs", **_job_context(request, job_id)})


@console_view
def job_body(request: HttpRequest, job_id: int) -> HttpResponse:
    return render(request, "console/_job_body.html", _job_context(request, job_id))


@console_view
def job_usage(request: HttpRequest, job_id: int) -> HttpResponse:
    """The running job's Usage panel alone: re-read on each agent report (topic ``usage``)."""
    job = Job.objects.filter(visibility.visible_jobs(request.user), pk=job_id).only("state").first()
    if job is None:
        raise Http404(f"Invalid job id specified: {job_id}")
    return render(request, "console/_job_usage.html", _usage_context(request, job_id, job.state))
