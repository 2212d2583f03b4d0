"""The console's load views (mounted at ``/load/``)."""

from __future__ import annotations

from django.urls import path

from load import views

urlpatterns = [
    path("nodes/<str:name>/_chart", views.node_chart_data, name="load-node-chart"),
]
