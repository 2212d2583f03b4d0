"""The console's pages and their live fragments (``_``-prefixed paths)."""

from __future__ import annotations

from django.urls import include, path

from cluster import job_actions, node_actions, views

urlpatterns = [
    path("", include("cluster.lists.urls")),
    path("", views.dashboard, name="home"),
    path("_grid", views.dashboard_grid, name="dashboard-grid"),
    path("_summary", views.job_summary, name="job-summary"),
    path("_events", views.events, name="events"),
    path("nodes/", views.nodes, name="nodes"),
    path("nodes/_grid", views.node_grid, name="node-grid"),
    path("nodes/_counts", views.node_counts, name="node-counts"),
    path("nodes/<str:name>/", views.node, name="node"),
    path("nodes/<str:name>/_body", views.node_body, name="node-body"),
    path("nodes/<str:name>/actions/<str:action>/", node_actions.node_action, name="node-action"),
    path("jobs/<int:job_id>/", views.job, name="job"),
    path("jobs/<int:job_id>/_body", views.job_body, name="job-body"),
    path("jobs/<int:job_id>/_usage", views.job_usage, name="job-usage"),
    path("jobs/<int:job_id>/actions/<str:action>/", job_actions.job_action, name="job-action"),
]
