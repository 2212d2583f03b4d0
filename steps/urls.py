from django.urls import path

from steps import api

urlpatterns = [
    path("steps/", api.RunningSteps.as_view()),
    path("jobs/<int:job_id>/steps/", api.JobSteps.as_view()),
    path("jobs/<int:job_id>/steps/<int:step_id>/", api.StepDetail.as_view()),
    *[
        path(f"jobs/<int:job_id>/steps/<int:step_id>/{action}/", api.StepAction.as_view(action=action))
        for action in ("cancel", "signal")
    ],
]
