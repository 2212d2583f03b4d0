"""The console's Reports page (mounted at ``/reports/``)."""

from __future__ import annotations

from django.urls import path

from reports import views

urlpatterns = [
    path("", views.reports, name="reports"),
    path("saved/", views.saved_create, name="reports-saved"),
    path("saved/<int:saved_id>/delete/", views.saved_delete, name="reports-saved-delete"),
    path("files/<int:file_id>/", views.report_file, name="reports-file"),
]
