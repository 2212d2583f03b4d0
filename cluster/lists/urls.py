"""The list pages, their table fragments and exports."""

from __future__ import annotations

from django.urls import path

from cluster.lists import views

urlpatterns = [
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/_table", views.job_table, name="job-table"),
    path("jobs/export", views.job_export, name="job-export"),
]
urlpatterns += [
    path("nodes/_table", views.node_table, name="node-table"),
    path("nodes/export", views.node_export, name="node-export"),
    path("events/", views.events, name="event-list"),
    path("events/_table", views.event_table, name="event-table"),
    path("events/export", views.event_export, name="event-export"),
    path("audit/", views.audit, name="audit"),
    path("audit/_table", views.audit_table, name="audit-table"),
    path("audit/export", views.audit_export, name="audit-export"),
]
