"""The console's Power page (``/power/``): node power states now and over the last hour
(plotly, served locally from the installed package), and the power program runs.

Read only, like every console view; kept live by the ``power`` and ``nodes`` topics.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from cluster import visibility
from cluster.views import console_view
from power import selectors


def _nodes_visible(request: HttpRequest) -> None:
    # PrivateData=nodes: node (and so power) state is not shown to regular users.
    if visibility.hides(request.user, "nodes"):
        raise PermissionDenied("Access/permission denied")


@console_view
def power(request: HttpRequest) -> HttpResponse:
    _nodes_visible(request)
    return render(request, "power/power.html", {"nav": "power", **selectors.power_page(timezone.now())})


@console_view
def power_body(request: HttpRequest) -> HttpResponse:
    _nodes_visible(request)
    return render(request, "power/_power_body.html", selectors.power_page(timezone.now()))
