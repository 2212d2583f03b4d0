"""The list pages, their table fragments and exports."""

from __future__ import annotations

from django.urls import path

from cluster.lists import views

urlpatterns = [
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/_table", views.job_table, name="job-table"),
    path("jobs/export", views.job_export, name="job-export"),
]
