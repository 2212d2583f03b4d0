"""REST API of the accounting policy (``/api/limits/...``): sacctmgr and sshare talk to
these.  Each view validates its input, calls one service or report, and serializes."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import visibility
from cluster.api.permissions import StaffOnly
from cluster.services import inputs
from cluster.services.errors import PermissionDenied, ServiceError
from limits import coordinators, private_data, reports, selectors, services
from limits.dump import dump_text, load_text

COORDINATOR = ("coordinator", "coordinators")
DUMP_DENIED = "Your user does not have sufficient privileges to dump clusters."
# More words than any sacctmgr command line holds.
WORDS_MAX = 1000


def _body(data: object, fields: tuple[str, ...]) -> dict:
    body = inputs.body_object(data)
    inputs.known_fields(body, (*fields, "commit"))
    return dict(body)


def _strings(data: dict, name: str) -> list[str]:
    value = data.get(name, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ServiceError(f"{name} must be a list of strings", field=name)
    if len(value) > WORDS_MAX:
        raise ServiceError(f"{name}: more than {WORDS_MAX} words", field=name)
    return value


def _commit(data: dict) -> bool:
    """sacctmgr's preview (false) or change (true, the default); nothing else means either."""
    return inputs.flag(data.get("commit", True), "commit")


def _change(change: services.Change) -> Response:
    return Response(
        {
            "lines": change.lines,
            "count": change.count,
            "committed": change.committed,
            "cancelled": change.cancelled,
        }
    )


class Add(APIView):
    permission_classes = [StaffOnly]

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request, entity: str) -> Response:
        d = _body(request.data, ("names", "options"))
        if entity.lower() in COORDINATOR:
            return _change(
                coordinators.coordinator_add(
                    actor=request.user,
                    names=_strings(d, "names"),
                    options=_strings(d, "options"),
                    commit=_commit(d),
                )
            )
        return _change(
            services.record_add(
                actor=request.user,
                entity=entity,
                names=_strings(d, "names"),
                options=_strings(d, "options"),
                commit=_commit(d),
            )
        )


class Modify(APIView):
    permission_classes = [StaffOnly]

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request, entity: str) -> Response:
        d = _body(request.data, ("where", "options"))
        return _change(
            services.record_modify(
                actor=request.user,
                entity=entity,
                where=_strings(d, "where"),
                options=_strings(d, "options"),
                commit=_commit(d),
            )
        )


class Delete(APIView):
    permission_classes = [StaffOnly]

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request, entity: str) -> Response:
        d = _body(request.data, ("where",))
        if entity.lower() in COORDINATOR:
            return _change(
                coordinators.coordinator_delete(
                    actor=request.user, where=_strings(d, "where"), commit=_commit(d)
                )
            )
        return _change(
            services.record_delete(
                actor=request.user,
                entity=entity,
                where=_strings(d, "where"),
                commit=_commit(d),
            )
        )


class Show(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request, entity: str) -> Response:
        word = entity.lower().rstrip("s") if entity.lower() != "qos" else "qos"
        word = {"assoc": "association", "associations": "association"}.get(word, word)
        if word not in selectors.DEFAULT_COLUMNS:
            raise ServiceError(f"Unknown entity '{entity}'")
        where = services.parse_where(request.query_params.getlist("where"))
        asked = request.query_params.get("withassoc") in ("1", "true")
        withassoc = asked and word in selectors.WITH_ASSOC_COLUMNS
        rows = selectors.list_rows(word, where)
        if withassoc:
            rows = selectors.with_assoc_rows(word, rows)
        # Association rows name both an account and a user: both rules of PrivateData apply.
        rows = private_data.show_rows(request.user, "association" if withassoc else word, rows)
        return Response({"columns": selectors.default_columns(word, withassoc=withassoc), "rows": rows})


class Share(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        q = request.query_params
        accounts = [a for a in q.get("accounts", "").split(",") if a]
        users = [u for u in q.get("users", "").split(",") if u]
        all_users = q.get("all") == "1"
        if visibility.hides(request.user, "usage"):
            # PrivateData=usage: a regular user sees their own usage only (sshare).
            users, all_users = [request.user.get_username()], False
        if not users and not all_users:
            users = [request.user.get_username()]
        return Response({"rows": reports.share_rows(accounts=accounts, users=users, all_users=all_users)})


class AssocMgr(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        answer = reports.assoc_mgr()
        answer["associations"] = private_data.assoc_mgr_records(request.user, answer["associations"])
        return Response(answer)


class Dump(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        # sacctmgr dump asks for root, SlurmUser or AdminLevel=Administrator, whatever
        # PrivateData says: the file holds every association and limit.
        user = request.user
        if not (user.is_staff or coordinators.is_administrator(user.get_username())):
            raise PermissionDenied(DUMP_DENIED)
        return Response({"text": dump_text(cluster=request.query_params.get("cluster") or None)})


class Load(APIView):
    permission_classes = [StaffOnly]

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        d = _body(request.data, ("text",))
        text = d.get("text")
        if not isinstance(text, str):
            raise ServiceError("text must be the cluster file's content", field="text")
        return _change(load_text(actor=request.user, text=text, commit=_commit(d)))


urlpatterns = [
    path("add/<str:entity>/", Add.as_view()),
    path("modify/<str:entity>/", Modify.as_view()),
    path("delete/<str:entity>/", Delete.as_view()),
    path("show/<str:entity>/", Show.as_view()),
    path("sshare/", Share.as_view()),
    path("assoc_mgr/", AssocMgr.as_view()),
    path("dump/", Dump.as_view()),
    path("load/", Load.as_view()),
]
