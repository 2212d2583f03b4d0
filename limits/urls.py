from __future__ import annotations

from django.urls import path

from limits import actions, views

urlpatterns = [
    path("", views.tree, name="limits"),
    path("_tree", views.tree_fragment, name="limits-tree"),
    path("calculator/", views.calculator, name="limits-calculator"),
    path("change/", actions.change, name="limits-change"),
    path("change/apply/", actions.apply, name="limits-change-apply"),
    path("jobs/<int:job_id>/", views.job_explain, name="limits-job"),
]
