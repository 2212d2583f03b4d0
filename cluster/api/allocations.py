"""POST /api/jobs/{id}/allocation/renew/ and .../release/: an allocation's holder
(salloc, srun outside an allocation) keeps it alive, then gives it back with its
command's status (cluster/services/allocations.py); ``.../keep/`` (salloc --no-shell) leaves it held
without a holder.  A renewal also answers the
notifications (scontrol notify) after the ``seen`` one, for the holder to print."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.parsers import JSONParser
from cluster.api.serializers import JobSerializer
from cluster.api.views import visible_job
from cluster.core.allocation_leases import renew_every
from cluster.models import ClusterConfig
from cluster.services import allocations
from cluster.services.errors import ServiceError
from cluster.services.job_notify import unseen_notifications


def _body(request: Request) -> dict:
    if not isinstance(request.data, dict):
        raise ServiceError("The request body must be a JSON object")
    return request.data


class AllocationRenew(APIView):
    """The holder is alive; answers the job (its state tells a revoked allocation) and
    the lease's length with how often to renew it."""

    parser_classes = [JSONParser]

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request, job_id: int) -> Response:
        # ``seen``: the last notification (scontrol notify) the holder has printed.
        data = request.data if isinstance(request.data, dict) else {}
        seen = data.get("seen", 0)
        if isinstance(seen, bool) or not isinstance(seen, int) or not 0 <= seen < 2**63:
            raise ServiceError("seen: the id of the last notification printed, a whole number", field="seen")
        visible_job(request, job_id)
        lease = allocations.allocation_renew(actor=request.user, job_id=job_id)
        job = lease.job
        return Response(
            {
                "job": JobSerializer(job, context={"request": request}).data,
                # What salloc's SLURM_* variables need besides the job's fields: the CPUs on
                # each node, whether the agent has started it (its Prolog done), the cluster.
                "alloc": {node: held[0] for node, held in job.alloc.items()},
                "launched": job.launched,
                "cluster_name": ClusterConfig.current().cluster_name,
                "lease_seconds": lease.seconds,
                "renew_every": renew_every(lease.seconds),
                "notifications": unseen_notifications(job_id, seen),
            }
        )


class AllocationRelease(APIView):
    """The holder's command ended with ``exit_code`` (or ``signal``): the job ends with it."""

    parser_classes = [JSONParser]

    @extend_schema(request=dict, responses=JobSerializer)
    def post(self, request: Request, job_id: int) -> Response:
        data = _body(request)
        visible_job(request, job_id)
        job = allocations.allocation_release(
            actor=request.user,
            job_id=job_id,
            exit_code=data.get("exit_code", 0),
            signal=data.get("signal", 0),
        )
        return Response(JobSerializer(job).data)


class AllocationKeep(APIView):
    """salloc --no-shell: the allocation is kept without a holder (no lease)."""

    parser_classes = [JSONParser]

    @extend_schema(request=None, responses=JobSerializer)
    def post(self, request: Request, job_id: int) -> Response:
        visible_job(request, job_id)
        job = allocations.allocation_keep(actor=request.user, job_id=job_id)
        return Response(JobSerializer(job, context={"request": request}).data)
