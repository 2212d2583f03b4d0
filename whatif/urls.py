"""The console's what-if views (mounted at ``/whatif/``)."""

from __future__ import annotations

from django.urls import path

from whatif import views

urlpatterns = [
    path("", views.whatif_list, name="whatif"),
    path("new/", views.whatif_new, name="whatif-new"),
    path("<int:pk>/", views.whatif_detail, name="whatif-detail"),
    path("<int:pk>/_status", views.whatif_status, name="whatif-status"),
    path("<int:pk>/<str:side>/report.html", views.whatif_report, name="whatif-report"),
]
