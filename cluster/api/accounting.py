"""``GET /api/accounting/jobs/``: jobs and their steps for ``fsched sacct`` (cluster/accounting.py).

Query parameters, each optional: ``job_id`` (comma list of ``N``, ``N_T``; a ``.step`` suffix
is the CLI's to apply), ``user``, ``account``, ``partition``, ``name``, ``qos``, ``state``
(comma lists), ``nodelist`` (a hostlist), ``nnodes``, ``ncpus``, ``timelimit`` (``min``
for exactly min or ``min-max``; timelimit in minutes, ``UNLIMITED`` for none),
``all_users=1``, ``start``/``end`` (Unix seconds), ``duplicates=1`` (sacct -D: requeued
jobs' earlier runs too, each before the job's later ones; cluster/run_accounting.py),
``after`` (the cursor the previous page returned as ``next``) and ``limit``.
The answer is ``{"jobs": [...], "next": cursor|null}``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import accounting, run_accounting, selectors
from cluster.api.views import csv_param, job_id_filter
from cluster.core import hostlists, jobspec
from cluster.services.errors import ServiceError

DEFAULT_LIMIT = 1000
MAX_LIMIT = 5000
MAX_NODELIST = 65536  # names in sacct -N's hostlist
_MAX_EPOCH = 253402300799  # 9999-12-31T23:59:59Z, the last second datetime holds


def _number(request: Request, name: str, default: int, maximum: int) -> int:
    raw = request.query_params.get(name, "")
    if raw == "":
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or int(raw) > maximum:
        raise ServiceError(f"Invalid {name}: {raw[:40]!r} (a whole number from 0 to {maximum})", field=name)
    return int(raw)


def _flag(request: Request, name: str) -> bool:
    raw = request.query_params.get(name, "")
    if raw not in ("", "0", "1", "true", "false"):
        raise ServiceError(f"Invalid {name}: {raw[:40]!r} (1 or 0)", field=name)
    return raw in ("1", "true")


def _moment(request: Request, name: str) -> datetime | None:
    if request.query_params.get(name, "") == "":
        return None
    return datetime.fromtimestamp(_number(request, name, 0, _MAX_EPOCH), tz=UTC)


def _range(request: Request, name: str, *, unlimited: int | None = None) -> tuple[int, int | None] | None:
    """``min[-max]`` (sacct -i, -I, -k/-K), whole numbers; ``UNLIMITED`` where the
    parameter takes it (``timelimit``)."""
    raw = request.query_params.get(name, "")
    if raw == "":
        return None

    def number(text: str) -> int:
        if unlimited is not None and text.upper() == "UNLIMITED":
            return unlimited
        if not (text.isascii() and text.isdigit() and len(text) <= 10):
            words = "whole numbers" + (" or UNLIMITED" if unlimited is not None else "")
            raise ServiceError(f"Invalid {name}: {raw[:40]!r} (min or min-max, {words})", field=name)
        return int(text)

    low, dash, high = raw.partition("-")
    return number(low), (number(high) if dash else None)


def _nodes(request: Request) -> frozenset[str]:
    """``nodelist``: a hostlist (sacct -N ``node[01-04]``) of at most MAX_NODELIST names
    (or the cluster's hostlist bound, if larger)."""
    text = request.query_params.get("nodelist", "")
    if not text:
        return frozenset()
    try:
        # Nodes since removed ran jobs too: the bound is not the cluster's size alone.
        limit = max(selectors.hostlist_limit(), MAX_NODELIST)
        return frozenset(hostlists.parse(text, limit=limit, what="nodelist"))
    except hostlists.HostlistTooLarge as exc:
        raise ServiceError(str(exc), field="nodelist") from None
    except hostlists.HostlistError:
        shown = jobspec.quoted(text[:64])
        raise ServiceError(f"Invalid node name specified: {shown}", field="nodelist") from None


class AccountingJobs(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        ids = [value.partition(".")[0] for value in csv_param(request, "job_id")]
        try:
            states = accounting.job_states(csv_param(request, "state"))
        except ValueError as exc:
            raise ServiceError(str(exc), field="state") from None
        filters = accounting.Filters(
            job_ids=job_id_filter(ids) if ids else None,
            users=csv_param(request, "user"),
            all_users=request.query_params.get("all_users") in ("1", "true"),
            accounts=csv_param(request, "account"),
            partitions=csv_param(request, "partition"),
            names=csv_param(request, "name"),
            qos=csv_param(request, "qos"),
            nodes=_nodes(request),
            states=states,
            start=_moment(request, "start"),
            end=_moment(request, "end"),
            nnodes=_range(request, "nnodes"),
            ncpus=_range(request, "ncpus"),
            time_limit=_range(request, "timelimit", unlimited=accounting.INFINITE_MINUTES),
        )
        if filters.start and filters.end and filters.start > filters.end:
            raise ServiceError("Start time requested is after end time.", field="start")
        duplicates = _flag(request, "duplicates")
        after = _number(request, "after", 0, 2**62)
        now = timezone.now()
        jobs, cursor = accounting.accounting_jobs(
            viewer=request.user,
            filters=filters,
            after=after,
            limit=_number(request, "limit", DEFAULT_LIMIT, MAX_LIMIT) or DEFAULT_LIMIT,
            now=now,
        )
        if duplicates:
            # The page covers the job ids up to its cursor: the earlier runs of those.
            runs = run_accounting.earlier_runs(
                viewer=request.user, filters=filters, after=after, upto=cursor, now=now
            )
            jobs = run_accounting.with_earlier_runs(jobs, runs)
        return Response({"jobs": jobs, "next": cursor})
