"""The console's load views: the node page's chart data, kept live by the ``load`` topic
(the load check publishes it when it keeps samples or acts), and the
section that loads plotly.min.js (cluster.plotly_asset) on the node page.

Read only, like every console view.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone

from cluster.extensions import PageSection
from cluster.models import Node
from cluster.views import console_view
from load.charts import node_chart


def chart_context(name: str) -> dict:
    return {"chart": node_chart(name, now=timezone.now()), "node_name": name}


@console_view
def node_chart_data(request: HttpRequest, name: str) -> HttpResponse:
    if not Node.objects.filter(name=name).exists():
        raise Http404(f"Node {name} not found")
    return render(request, "load/_node_chart_data.html", chart_context(name))


def node_section(name: str) -> PageSection:
    """The load chart's section of the node page (LoadExtension.node_page_sections)."""
    return PageSection(
        template="load/_node_section.html",
        context=chart_context(name),
        scripts=(reverse("plotly-js"), static("load/load_chart.js")),
        styles=(static("load/load.css"),),
    )
