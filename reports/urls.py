"""The console's Reports page (mounted at ``/reports/``)."""

from __future__ import annotations

from django.urls import path

from reports import views

urlpatterns = [path("", views.reports, name="reports")]
