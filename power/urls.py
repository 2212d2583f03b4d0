"""The console's Power page (mounted at ``/power/``)."""

from __future__ import annotations

from django.urls import path

from power import views

urlpatterns = [
    path("", views.power, name="power"),
    path("_body", views.power_body, name="power-body"),
]
