"""The console's Resources pages (mounted at ``/hres/``)."""

from __future__ import annotations

from django.urls import path

from hres import actions, views

urlpatterns = [
    path("", views.layers, name="hres"),
    path("_tree", views.tree, name="hres-tree"),
    path("<str:resource>/<str:layer>/", views.layer, name="hres-layer"),
    path("<str:resource>/<str:layer>/_body", views.layer_body, name="hres-layer-body"),
    path("<str:resource>/<str:layer>/update/", actions.layer_update, name="hres-layer-update"),
]
