from django.urls import path

from power import api

urlpatterns = [
    path("", api.PowerRequest.as_view()),
    path("runs/", api.PowerRuns.as_view()),
    path("instances/", api.Instances.as_view()),
    path("settings/", api.PowerSettings.as_view()),
]
