"""REST API views: each validates its input, calls one service, serializes the result."""

from __future__ import annotations

import re
from typing import Any

from ClusterShell.NodeSet import NodeSet
from django.db.models import Q, QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import explainer, extensions, selectors, visibility
from cluster.api import planned_starts
from cluster.api.pagination import JobPages
from cluster.api.parsers import JSONParser
from cluster.api.permissions import StaffOnly, StaffWrites
from cluster.api.serializers import JobSerializer, JobSubmitSerializer, NodeSerializer, PartitionSerializer
from cluster.core import hostlists, jobspec, states
from cluster.models import ClusterConfig, Job, Node, Partition
from cluster.services import dynamic_nodes, inputs
from cluster.services import jobs as job_services
from cluster.services import nodes as node_services
from cluster.services import reboots as reboot_services
from cluster.services import reservations as reservation_services
from cluster.services.configuration import config_load
from cluster.services.errors import NotFound, PermissionDenied, ServiceError
from cluster.services.job_user_names import user_names_known
from slurmwords.job_state_names import state_name
from slurmwords.node_state_filter import parse_node_states

# Values of one list filter (``?job_id=1,2,...``): each is a bound variable of one query.
MAX_FILTER_VALUES = 1000
# The views' bodies are JSON, parsed with its depth and text checked (cluster.api.parsers).
PARSERS = [JSONParser]
SECRET_OPTION = re.compile(r"pass|secret|token|key$", re.IGNORECASE)


def csv_param(request: Request, name: str) -> list[str]:
    return _split(request.query_params.get(name, ""), name)


def _split(value: Any, name: str) -> list[str]:
    """A comma list of a filter, each item printable text (squeue -u a,b)."""
    try:
        text = jobspec.check_text(value, name, name, max_len=MAX_FILTER_VALUES * 64)
    except jobspec.SpecError as exc:
        raise ServiceError(str(exc), field=name) from None
    values = [v for v in text.split(",") if v]
    if len(values) > MAX_FILTER_VALUES:
        raise ServiceError(f"Too many values for {name}: at most {MAX_FILTER_VALUES}", field=name)
    return values


def _job_number(text: str, maximum: int) -> int | None:
    """A job or task id as squeue -j takes it: ASCII digits, within the column."""
    if not (text.isascii() and text.isdigit() and len(text) <= 19) or int(text) > maximum:
        return None
    return int(text)


def job_id_filter(values: list[str]) -> Q:
    ids: set[int] = set()
    tasks = Q(pk__in=[])
    for value in values:
        base, _, task = value.partition("_")
        job_id = _job_number(base, job_services.MAX_JOB_ID)
        if job_id is None:
            raise ServiceError(f"Invalid job id specified: {jobspec.quoted(value)}", field="job_id")
        if task:
            # 12_abc names no task: it matches nothing, as squeue -j shows nothing for it.
            task_id = _job_number(task, jobspec.MAX_INT32)
            if task_id is not None:
                tasks |= Q(array_job_id=job_id, array_task_id=task_id)
        else:
            ids.add(job_id)
    return Q(pk__in=sorted(ids)) | Q(array_job_id__in=sorted(ids)) | tasks


def _job_states(values: list[str]) -> list[str] | None:
    if not values:
        return [s.value for s in states.ACTIVE_JOB_STATES]
    if any(v.lower() == "all" for v in values):
        return None
    out = []
    for value in values:
        # A state Slurm knows and fsched never gives (REVOKED, STAGE_OUT...) matches nothing.
        name = state_name(value)
        if name is None:
            raise ServiceError(f"Invalid job state specified: {value}")
        out.append(name)
    return out


class JobListCreate(generics.ListCreateAPIView):
    serializer_class = JobSerializer
    pagination_class = JobPages
    parser_classes = PARSERS

    def get_queryset(self) -> QuerySet[Job]:
        qs = Job.objects.filter(visibility.visible_jobs(self.request.user)).order_by("id")
        params = self.request
        ids = csv_param(params, "job_id")
        if ids:
            qs = qs.filter(job_id_filter(ids))
            wanted_states = _job_states(csv_param(params, "state")) if csv_param(params, "state") else None
        else:
            wanted_states = _job_states(csv_param(params, "state"))
        if wanted_states is not None:
            qs = qs.filter(state__in=wanted_states)
        for field in ("user", "partition", "account", "qos", "name"):
            values = csv_param(params, field)
            if values:
                qs = qs.filter(**{f"{field}__in": values})
        if array := params.query_params.get("array_job_id"):
            array_id = _job_number(array, job_services.MAX_JOB_ID)
            if array_id is None:
                raise ServiceError(f"Invalid job id specified: {jobspec.quoted(array)}", field="array_job_id")
            qs = qs.filter(array_job_id=array_id)
        return qs

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().list(request, *args, **kwargs)
        if planned_starts.wanted(request):
            data = response.data
            planned_starts.add_planned_starts(data["results"] if isinstance(data, dict) else data)
        return response

    @extend_schema(request=JobSubmitSerializer, responses={201: dict})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if not isinstance(request.data, dict):
            raise ServiceError("The request body must be a JSON object")
        if request.data.get("test_only") is True:
            return Response(job_services.job_test_only(user=request.user, spec=dict(request.data)))
        submitted = job_services.job_submit(
            user=request.user,
            spec=dict(request.data),
            idempotency_key=request.headers.get("Idempotency-Key"),
        )
        answer = {
            "job_id": submitted.job_ids[0],
            "job_ids": submitted.job_ids,
            "array_job_id": submitted.array_job_id,
        }
        if submitted.user_msg:  # JobSubmitPlugins' slurm.user_msg, which sbatch prints
            answer["user_msg"] = submitted.user_msg
        return Response(
            answer,
            status=status.HTTP_201_CREATED,
        )


def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object (an action without a body has ``{}``)."""
    if not isinstance(request.data, dict):
        raise ServiceError("The request body must be a JSON object")
    return request.data


class JobDetail(generics.RetrieveAPIView):
    serializer_class = JobSerializer
    queryset = Job.objects.all()
    lookup_url_kwarg = "job_id"
    parser_classes = PARSERS

    def get_object(self) -> Job:
        return visible_job(self.request, self.kwargs["job_id"])

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().retrieve(request, *args, **kwargs)
        if planned_starts.wanted(request):
            planned_starts.add_planned_starts([response.data])
        return response

    def patch(self, request: Request, job_id: int) -> Response:
        _body(request)
        visible_job(request, job_id)
        job = job_services.job_update(actor=request.user, job_id=job_id, changes=dict(request.data))
        return Response(JobSerializer(job).data)


class JobExplain(APIView):
    """GET /api/jobs/{id}/explain/: what holds a pending job (or keeps a job STOPPED by the
    load thresholds), cause by cause, with what would release it (``fsched explain``).
    Slurm's reason code stays in ``reason``, bare."""

    @extend_schema(responses=dict)
    def get(self, request: Request, job_id: int) -> Response:
        job = visible_job(request, job_id)
        answer = explainer.explain(job, now=timezone.now())
        estimate = answer.estimate
        return Response(
            {
                "job_id": job.id,
                "state": job.state,
                "reason": job.reason,
                "reason_detail": job.reason_detail,
                "causes": [
                    {"reason": c.reason, "holder": c.holder, "level": c.level, "release": c.release}
                    for c in answer.causes
                ],
                # Backfill's plan, as scontrol show job's StartTime= and SchedNodeList=.
                "start_time": estimate.start.isoformat() if estimate else None,
                "sched_nodes": estimate.nodes if estimate else "",
            }
        )


def visible_job(request: Request, job_id: int) -> Job:
    """The job, or Slurm's "Invalid job id specified" when PrivateData=jobs hides it."""
    job = job_services.get_job(job_id)
    if not visibility.may_see(request.user, job):
        raise NotFound("Invalid job id specified")
    return job


class JobScript(APIView):
    """GET /api/jobs/{id}/script/: the batch script and environment (``scontrol write
    batch_script``), for the job's owner, its account's coordinators and staff only."""

    @extend_schema(responses=dict)
    def get(self, request: Request, job_id: int) -> Response:
        job = visible_job(request, job_id)
        if not visibility.may_manage(request.user, job):
            raise PermissionDenied("Access/permission denied")
        return Response({"job_id": job.id, "script": job.script, "environment": job.environment})


class JobAction(APIView):
    """POST /api/jobs/{id}/<action>/."""

    action: str = ""
    parser_classes = PARSERS
    _services = {
        "hold": job_services.job_hold,
        "release": job_services.job_release,
        "requeue": job_services.job_requeue,
        "suspend": job_services.job_suspend,
        "resume": job_services.job_resume,
    }

    @extend_schema(request=None, responses=JobSerializer)
    def post(self, request: Request, job_id: int) -> Response:
        visible_job(request, job_id)
        if self.action == "cancel":
            data = _body(request)
            job = job_services.job_cancel(
                actor=request.user, job_id=job_id, signal=data.get("signal"), scope=_scope(data)
            )
        elif self.action == "hold":
            user_hold = _body(request).get("user", False)
            if not isinstance(user_hold, bool):
                raise ServiceError("user must be true or false", field="user")
            job = job_services.job_hold(actor=request.user, job_id=job_id, user_hold=user_hold)
        elif self.action == "requeue":
            hold = _body(request).get("hold", False)
            if not isinstance(hold, bool):
                raise ServiceError("hold must be true or false", field="hold")
            job = job_services.job_requeue(actor=request.user, job_id=job_id, hold=hold)
        else:
            job = self._services[self.action](actor=request.user, job_id=job_id)
        return Response(JobSerializer(job).data)


class JobBulkCancel(APIView):
    """scancel with filters: each matching job is cancelled or reported with its error."""

    parser_classes = PARSERS

    @extend_schema(request=dict, responses=dict, operation_id="jobs_bulk_cancel")
    def post(self, request: Request) -> Response:
        data = _body(request)
        raw_ids = data.get("job_ids") or []
        if not isinstance(raw_ids, list) or len(raw_ids) > MAX_FILTER_VALUES:
            raise ServiceError(
                f"job_ids must be a list of at most {MAX_FILTER_VALUES} job ids", field="job_ids"
            )
        if not all(isinstance(i, str | int) and not isinstance(i, bool) for i in raw_ids):
            raise ServiceError("job_ids must be a list of job ids", field="job_ids")
        ids = [str(i) for i in raw_ids]
        signal = data.get("signal")
        if signal is not None and not isinstance(signal, str):
            raise ServiceError(f"Invalid signal name: {jobspec.quoted(signal)}", field="signal")
        scope = _scope(data)
        # A job PrivateData=jobs hides is reported as unknown, as Slurm does.
        visible = visibility.visible_jobs(request.user)
        qs = Job.objects.filter(visible, state__in=[s.value for s in states.ACTIVE_JOB_STATES])
        errors: list[dict[str, Any]] = []
        if ids:
            existing = Job.objects.filter(visible).filter(job_id_filter(ids))
            found = {str(j.id) for j in existing} | {f"{j.array_job_id}_{j.array_task_id}" for j in existing}
            found |= {str(j.array_job_id) for j in existing if j.array_job_id}
            for value in ids:
                if value not in found:
                    errors.append({"job_id": value, "error": "Invalid job id specified"})
            qs = qs.filter(job_id_filter(ids))
        elif not any(data.get(k) for k in ("user", "state", "partition", "name", "account")):
            raise ServiceError("No job identification provided")
        for field in ("user", "partition", "name", "account"):
            if value := data.get(field):
                qs = qs.filter(**{f"{field}__in": _split(value, field)})
        if value := data.get("state"):
            wanted = _job_states(_split(value, "state"))
            if wanted is not None:
                qs = qs.filter(state__in=wanted)
        cancelled = []
        for job in qs.order_by("id"):
            try:
                job_services.job_cancel(actor=request.user, job_id=job.id, signal=signal, scope=scope)
                cancelled.append(job.id)
            except ServiceError as exc:
                if ids or request.user.is_staff or job.user == request.user.get_username():
                    errors.append({"job_id": job.id, "error": str(exc)})
        return Response({"cancelled": cancelled, "errors": errors})


def _scope(data: Any) -> str:
    """Which processes a signal reaches: ``scope`` (steps, batch, full; scancel's -b and -f)."""
    scope = data.get("scope", "steps") if hasattr(data, "get") else "steps"
    if not isinstance(scope, str):
        raise ServiceError(f"Invalid signal scope: {jobspec.quoted(scope)}", field="scope")
    return scope


def _with_extension_fields(objects: list[dict]) -> list[dict]:
    """The node objects with what the extensions add to them (the load indices...)."""
    details = extensions.node_details([o["name"] for o in objects])
    for obj in objects:
        obj.update(details.get(obj["name"], {}))
    return objects


class NodeList(generics.ListAPIView):
    serializer_class = NodeSerializer

    def list(self, request: Request, *args, **kwargs) -> Response:
        response = super().list(request, *args, **kwargs)
        page = response.data.get("results") if isinstance(response.data, dict) else response.data
        _with_extension_fields(page)
        return response

    def get_queryset(self) -> QuerySet[Node]:
        if visibility.hides(self.request.user, "nodes"):  # PrivateData=nodes: none shown
            return Node.objects.none()
        qs = Node.objects.all()
        if names := self.request.query_params.get("name"):
            try:
                wanted = hostlists.expand(names, limit=selectors.hostlist_limit(), what="name")
            except ValueError as exc:
                raise ServiceError(str(exc), field="name") from None
            qs = qs.filter(name__in=wanted)
        if partition := self.request.query_params.get("partition"):
            p = Partition.objects.filter(name=partition).first()
            if p is None:
                raise ServiceError("Invalid partition name specified")
            qs = qs.filter(name__in=list(NodeSet(p.nodes or "")))
        if wanted_states := self.request.query_params.get("state"):
            qs = _in_states(qs, wanted_states)
        return qs


def _in_states(qs: QuerySet[Node], text: str) -> QuerySet[Node]:
    """``?state=``: sinfo's ``-t`` list (slurmwords.node_state_filter)."""
    try:
        wanted = parse_node_states(text)
    except ValueError as exc:
        raise ServiceError(str(exc), field="state") from None
    if wanted.states is None:
        return qs
    names = [
        name
        for name, base, flags, alloc_cpus in qs.values_list("name", "base_state", "flags", "alloc_cpus")
        if wanted.selects(
            base, states.flag_names(flags, base), alloc_cpus, states.drain_word(states.NodeBase(base), flags)
        )
    ]
    return qs.filter(name__in=names)


class NodeDetail(generics.RetrieveAPIView):
    serializer_class = NodeSerializer
    queryset = Node.objects.all()
    lookup_field = "name"

    def get_object(self) -> Node:
        node = Node.objects.filter(name=self.kwargs["name"]).first()
        if node is None or visibility.hides(self.request.user, "nodes"):
            raise NotFound(f"Node {self.kwargs['name']} not found")
        return node

    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        response = super().retrieve(request, *args, **kwargs)
        _with_extension_fields([response.data])
        return response


class NodeUpdate(APIView):
    permission_classes = [StaffOnly]
    parser_classes = PARSERS

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        # The service checks the caller is staff before it reads the body (403, not 400/500).
        updated = node_services.node_update_request(actor=request.user, body=request.data)
        return Response({"updated": updated})


class NodeReboot(APIView):
    """``POST /api/nodes/reboot/`` ``{"nodes": "node[01-02]" | "ALL", "asap": false,
    "next_state": "" | "RESUME" | "DOWN", "reason": "..."}``: ``scontrol reboot`` (staff)."""

    permission_classes = [StaffOnly]
    parser_classes = PARSERS

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        data = inputs.body_object(request.data)
        inputs.known_fields(data, reboot_services.FIELDS)
        answer = reboot_services.node_reboot(actor=request.user, **{"nodes": "", **data})
        return Response({"nodes": answer.queued, "skipped": answer.skipped, "message": answer.message})


class NodeCancelReboot(APIView):
    """``POST /api/nodes/cancel_reboot/`` ``{"nodes": "node01"}``: ``scontrol cancel_reboot``."""

    permission_classes = [StaffOnly]
    parser_classes = PARSERS

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        data = inputs.body_object(request.data)
        inputs.known_fields(data, ("nodes",))
        return Response(
            {"nodes": reboot_services.node_cancel_reboot(actor=request.user, nodes=data.get("nodes", ""))}
        )


class ReservationList(APIView):
    """``GET``: ``scontrol show reservation`` (``?name=``); ``POST``: create (staff)."""

    permission_classes = [StaffWrites]
    parser_classes = PARSERS

    @extend_schema(responses=dict, operation_id="reservations_list")
    def get(self, request: Request) -> Response:
        name = request.query_params.get("name") or None
        rows = reservation_services.reservation_list(name)
        rows = [r for r in rows if visibility.may_see_reservation(request.user, r["users"], r["accounts"])]
        if name and not rows:
            raise NotFound(f"Reservation {name} not found")
        return Response({"reservations": rows})

    @extend_schema(request=dict, responses=dict, operation_id="reservations_create")
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ServiceError("The request body must be a JSON object")
        made = reservation_services.reservation_create(actor=request.user, values=request.data)
        return Response(made, status=status.HTTP_201_CREATED)


class ReservationDetail(APIView):
    """``GET``, ``PATCH`` (``scontrol update ReservationName=``) and ``DELETE`` (staff)."""

    permission_classes = [StaffWrites]
    parser_classes = PARSERS

    @extend_schema(responses=dict, operation_id="reservations_get")
    def get(self, request: Request, name: str) -> Response:
        row = reservation_services.reservation_list(name)[0]
        if not visibility.may_see_reservation(request.user, row["users"], row["accounts"]):
            raise NotFound(f"Reservation {name} not found")
        return Response(row)

    @extend_schema(request=dict, responses=dict, operation_id="reservations_update")
    def patch(self, request: Request, name: str) -> Response:
        if not isinstance(request.data, dict):
            raise ServiceError("The request body must be a JSON object")
        changed = reservation_services.reservation_update(actor=request.user, name=name, values=request.data)
        return Response(changed)

    @extend_schema(responses=None, operation_id="reservations_delete")
    def delete(self, request: Request, name: str) -> Response:
        reservation_services.reservation_delete(actor=request.user, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)


class NodeCreate(APIView):
    """``scontrol create NodeName=...``: a dynamic node (staff); body: the Key=Value pairs."""

    permission_classes = [StaffOnly]
    parser_classes = PARSERS

    @extend_schema(request=dict, responses=dict, operation_id="nodes_create")
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ServiceError("The request body must be a JSON object")
        node = dynamic_nodes.node_create(actor=request.user, params=request.data)
        return Response(NodeSerializer(node).data, status=status.HTTP_201_CREATED)


class NodeDelete(APIView):
    """``scontrol delete NodeName=<nodes>``: dynamic nodes only (staff)."""

    permission_classes = [StaffOnly]
    parser_classes = PARSERS

    @extend_schema(request=dict, responses=dict, operation_id="nodes_delete")
    def post(self, request: Request) -> Response:
        names = request.data.get("nodes") if isinstance(request.data, dict) else request.data
        deleted = dynamic_nodes.node_delete(actor=request.user, names=names)
        return Response({"deleted": deleted})


class PartitionList(generics.ListAPIView):
    serializer_class = PartitionSerializer
    queryset = Partition.objects.all()


class Reconfigure(APIView):
    @extend_schema(request=None, responses=dict)
    def post(self, request: Request) -> Response:
        if not request.user.is_staff:
            return Response({"error": "Access/permission denied"}, status=status.HTTP_403_FORBIDDEN)
        conf = config_load(actor=request.user.get_username())
        return Response({"message": "reconfigure done", "warnings": [str(w) for w in conf.warnings]})


class ConfigView(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        cfg = ClusterConfig.current()
        options = cfg.options
        if not request.user.is_staff:
            # AccountingStoragePass, JobCompPass...: a secret of the configuration is staff's.
            options = {k: ("(hidden)" if SECRET_OPTION.search(k) else v) for k, v in options.items()}
        return Response(
            {
                "cluster_name": cfg.cluster_name,
                "options": options,
                "licenses": cfg.licenses,
                "loaded_at": cfg.loaded_at,
                "version": cfg.version,
            }
        )


class UserNames(APIView):
    """``GET /api/users/?name=a,b``: which of the names are users (``squeue -u``'s check)."""

    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        return Response({"users": user_names_known(csv_param(request, "name"))})


class WhoAmI(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        return Response({"username": request.user.get_username(), "is_staff": request.user.is_staff})
