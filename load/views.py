"""The console's load views: the node page's chart data, kept live by the ``load`` topic
(the load check publishes it when it keeps samples or acts), and plotly.min.js served from
the installed package, as the Power and Resources pages serve theirs.

Read only, like every console view.
"""

from __future__ import annotations

from pathlib import Path

import plotly
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from cluster.extensions import PageSection
from cluster.models import Node
from cluster.views import console_view
from load.charts import node_chart

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def chart_context(name: str) -> dict:
    return {"chart": node_chart(name, now=timezone.now()), "node_name": name}


@console_view
def node_chart_data(request: HttpRequest, name: str) -> HttpResponse:
    if not Node.objects.filter(name=name).exists():
        raise Http404(f"Node {name} not found")
    return render(request, "load/_node_chart_data.html", chart_context(name))


@require_safe
@cache_control(max_age=86400, public=True)
def plotly_js(request: HttpRequest) -> FileResponse:
    if not PLOTLY_JS.exists():  # pragma: no cover - plotly is in requirements.txt
        raise Http404("plotly.min.js is not installed")
    return FileResponse(PLOTLY_JS.open("rb"), content_type="text/javascript")


def node_section(name: str) -> PageSection:
    """The load chart's section of the node page (LoadExtension.node_page_sections)."""
    return PageSection(
        template="load/_node_section.html",
        context=chart_context(name),
        scripts=(reverse("load-plotly"), static("load/load_chart.js")),
        styles=(static("load/load.css"),),
    )
