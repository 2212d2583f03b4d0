"""The console's Power page (mounted at ``/power/``)."""

from __future__ import annotations

from django.urls import path

from power import actions, views

urlpatterns = [
    path("", views.power, name="power"),
    path("_body", views.power_body, name="power-body"),
    path("nodes/<str:name>/<str:action>/", actions.power_action, name="power-node-action"),
]
