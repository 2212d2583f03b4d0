from django.urls import path

from cluster.api import (
    accounting,
    allocations,
    debug_level,
    diag,
    job_notify,
    job_top,
    step_usage,
    tokens,
    views,
)

urlpatterns = [
    path("auth/token/", tokens.TokenView.as_view()),
    path("whoami/", views.WhoAmI.as_view()),
    path("users/", views.UserNames.as_view()),
    path("jobs/", views.JobListCreate.as_view()),
    path("jobs/cancel/", views.JobBulkCancel.as_view()),
    path("jobs/top/", job_top.JobTop.as_view()),
    path("jobs/<int:job_id>/", views.JobDetail.as_view()),
    path("jobs/<int:job_id>/explain/", views.JobExplain.as_view()),
    path("jobs/<int:job_id>/script/", views.JobScript.as_view()),
    path("jobs/<int:job_id>/notify/", job_notify.JobNotify.as_view()),
    path("jobs/<int:job_id>/usage/", step_usage.JobStepUsage.as_view()),
    path("jobs/<int:job_id>/allocation/renew/", allocations.AllocationRenew.as_view()),
    path("jobs/<int:job_id>/allocation/release/", allocations.AllocationRelease.as_view()),
    path("jobs/<int:job_id>/allocation/keep/", allocations.AllocationKeep.as_view()),
    *[
        path(f"jobs/<int:job_id>/{action}/", views.JobAction.as_view(action=action))
        for action in ("cancel", "hold", "release", "requeue", "suspend", "resume")
    ],
    path("nodes/", views.NodeList.as_view()),
    path("nodes/update/", views.NodeUpdate.as_view()),
    path("nodes/create/", views.NodeCreate.as_view()),
    path("nodes/delete/", views.NodeDelete.as_view()),
    path("nodes/reboot/", views.NodeReboot.as_view()),
    path("nodes/cancel_reboot/", views.NodeCancelReboot.as_view()),
    path("nodes/<str:name>/", views.NodeDetail.as_view()),
    path("partitions/", views.PartitionList.as_view()),
    path("reservations/", views.ReservationList.as_view()),
    path("reservations/<str:name>/", views.ReservationDetail.as_view()),
    path("reconfigure/", views.Reconfigure.as_view()),
    path("config/", views.ConfigView.as_view()),
    path("config/debug/", debug_level.DebugLevel.as_view()),
    path("priority/", diag.PriorityFactors.as_view()),
    path("diag/", diag.Diagnostics.as_view()),
    path("diag/reset/", diag.DiagnosticsReset.as_view()),
    path("accounting/jobs/", accounting.AccountingJobs.as_view()),
]
