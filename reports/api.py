"""REST API of the reports (``/api/reports/...``): ``fsched sreport`` reads these.

Figures are seconds of a TRES unit, read from the rollup tables; the CLI lays them out.
Someone not staff sees the usage of their own user only in the association and job reports
(as Slurm's ``PrivateData=usage``); the cluster's utilisation is everyone's.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from reports import selectors
from reports.params import ParamError, ReportParams, parse

REPORTS = ("utilization", "account_by_user", "user_by_account", "top_usage", "sizes_by_account")


def _users(request: Request, params: ReportParams) -> list[str]:
    if request.user.is_staff:
        return params.users
    return [request.user.get_username()]


class Sreport(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request, report: str) -> Response:
        if report not in REPORTS:
            return Response({"error": f"Not valid report {report}: one of {', '.join(REPORTS)}"}, status=404)
        allowed = selectors.CLUSTER_TRES if report == "utilization" else tuple(selectors.ASSOC_TRES)
        try:
            params = parse(request.query_params, tres_allowed=allowed)
        except ParamError as exc:
            return Response({"error": str(exc)}, status=400)
        w = params.window
        body: dict = {
            "cluster": selectors.cluster_name(),
            "start": int(w.start.timestamp()),
            "end": int(w.end.timestamp()),
            "tres": params.tres,
        }
        users = _users(request, params)
        if report == "utilization":
            body["rows"] = selectors.cluster_utilization(w, params.tres)
            return Response(body)
        # Percentages are of the cluster's reported time of each TRES (of cpu for billing and gpus).
        cluster = {r["tres"]: r["reported"] for r in selectors.cluster_utilization(w, selectors.CLUSTER_TRES)}
        body["reported"] = {t: cluster.get(t, cluster.get("cpu", 0.0)) for t in params.tres}
        if report == "account_by_user":
            body["rows"] = selectors.account_by_user(w, params.tres, accounts=params.accounts, users=users)
        elif report == "user_by_account":
            body["rows"] = selectors.user_by_account(w, params.tres, accounts=params.accounts, users=users)
        elif report == "top_usage":
            body["top"] = params.top
            body["rows"] = selectors.top_usage(
                w, params.tres, top=params.top, accounts=params.accounts, users=users, group=params.group
            )
        else:
            if len(params.tres) > 1 or params.tres[0] != "cpu":
                return Response({"error": "tres: the job reports count CPUs only"}, status=400)
            body.update(
                selectors.job_sizes(
                    w, params.grouping, accounts=params.accounts, users=users, flat=params.flat
                )
            )
        return Response(body)


urlpatterns = [path("sreport/<str:report>/", Sreport.as_view())]
