"""The job page's "Cancel" button: ``POST /jobs/<id>/cancel`` (CSRF-checked, confirmed on the
page), through the same service as ``scancel`` and the API, so the job's owner, its
account's coordinators and staff may and everyone else gets Slurm's refusal.  The service
records the cancellation with the user in the job's events (the audit trail)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from cluster import visibility
from cluster.models import Job
from cluster.services import jobs as job_services
from cluster.services.errors import NotFound, ServiceError


@require_POST
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    # A job the viewer may not see (PrivateData=jobs) is not found, as Slurm answers.
    if not Job.objects.filter(visibility.visible_jobs(request.user), pk=job_id).exists():
        raise Http404("Invalid job id specified")
    try:
        job_services.job_cancel(actor=request.user, job_id=job_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None
    except ServiceError as exc:  # PermissionDenied is one: "Access/permission denied"
        messages.error(request, f"scancel: error: Kill job error on job id {job_id}: {exc}")
    else:
        messages.success(request, f"Job {job_id} cancelled.")
    return redirect("job", job_id=job_id)
