"""The Help pages (mounted at ``/help/``): the guides of docs/, and the docs they link to."""

from __future__ import annotations

from django.urls import path

from guides import views

urlpatterns = [
    path("", views.index, name="help"),
    path("user/", views.user_guide, name="help-user"),
    path("admin/", views.admin_guide, name="help-admin"),
    path("docs/<slug:name>/", views.doc, name="help-doc"),
]
