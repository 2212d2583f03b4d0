"""Change an association's or a QOS's limit from the console, with a preview first.

``/limits/change/?qos=NAME`` or ``?account=A[&user=U[&partition=P]]`` (linked from the
limits tree, staff only as ``sacctmgr modify``): a form for one limit (``MaxJobs``,
``GrpTRES`` = ``cpu=8``...), a Preview that shows which pending jobs the change would
release or block (limits.preview), and Apply, a confirmed POST through
``record_modify``.  The rows' own audit entries (auditlog) and one entry with the reason
given carry the request's correlation id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db import models
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse

from cluster.action_flow import DENIED, ActionSpec, Field, run_action, staff
from cluster.services.action_audit import action_audit_record
from cluster.services.errors import NotFound, ServiceError
from cluster.views import console_view
from limits import services
from limits.models import QOS, Association
from limits.preview import limit_change_preview

_OPTION = re.compile(r"[A-Za-z]{2,40}")
# Suggestions for the form (sacctmgr(1) "ASSOCIATION LIMITS" / "QOS LIMITS"); the service
# decides which it takes for the row and refuses others in its words.
ASSOC_OPTIONS = (
    "GrpJobs", "GrpSubmitJobs", "GrpTRES", "GrpTRESMins", "GrpTRESRunMins", "GrpWall",
    "MaxJobs", "MaxSubmitJobs", "MaxTRES", "MaxTRESPerNode", "MaxTRESMins", "MaxWall", "Fairshare",
)  # fmt: skip
QOS_OPTIONS = (
    "GrpJobs", "GrpSubmitJobs", "GrpTRES", "GrpTRESMins", "GrpTRESRunMins", "GrpWall",
    "MaxJobsPerUser", "MaxSubmitJobsPerUser", "MaxJobsPerAccount", "MaxTRESPerUser",
    "MaxTRESPerAccount", "MaxTRESPerJob", "MaxTRESPerNode", "MaxWall", "Priority", "UsageFactor",
)  # fmt: skip


@dataclass(frozen=True)
class Target:
    """The row a change is for, in sacctmgr's terms."""

    qos: str = ""
    account: str = ""
    user: str = ""
    partition: str = ""

    @classmethod
    def from_query(cls, q: QueryDict) -> Target:
        return cls(**{k: q.get(k, "").strip()[:64] for k in ("qos", "account", "user", "partition")})

    @property
    def label(self) -> str:
        if self.qos:
            return f"QOS {self.qos}"
        who = f"{self.account}/{self.user}" + (f"/{self.partition}" if self.partition else "")
        return f"association {who if self.user else self.account}"

    def query(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}

    def entity_where(self) -> tuple[str, list[str]]:
        if self.qos:
            return "qos", [f"name={self.qos}"]
        if self.user:
            return "user", [f"name={self.user}", f"account={self.account}", f"partition={self.partition}"]
        return "account", [f"name={self.account}"]

    def row(self) -> models.Model:
        if self.qos:
            found = QOS.objects.filter(name=self.qos).first()
        elif self.account:
            qs = Association.objects.filter(
                account__name=self.account, cluster__name=services.accounting_cluster()
            )
            if self.user:
                qs = qs.filter(user__name=self.user, partition=self.partition)
            else:
                qs = qs.filter(user__isnull=True)
            found = qs.first()
        else:
            found = None
        if found is None:
            raise NotFound(f"No {self.label}")
        return found


def _option(option: str, value: str) -> str:
    if not _OPTION.fullmatch(option):
        raise ServiceError(f"Invalid limit name: {option[:40]!r}", field="option")
    if not value or len(value) > 256 or any(c.isspace() for c in value):
        raise ServiceError(f"Invalid {option} value: one word, such as 10, cpu=8 or -1", field="value")
    return f"{option}={value}"


@console_view
def change(request: HttpRequest) -> HttpResponse:
    """The form, and with ``option`` and ``value`` the preview (GET: nothing changes)."""
    if not staff(request):
        return HttpResponse(DENIED, status=403, content_type="text/plain")
    target = Target.from_query(request.GET)
    option, value = request.GET.get("option", "").strip(), request.GET.get("value", "").strip()
    context: dict[str, Any] = {
        "nav": "limits",
        "target": target,
        "option": option,
        "value": value,
        "options": QOS_OPTIONS if target.qos else ASSOC_OPTIONS,
        "apply_url": reverse("limits-change-apply"),
    }
    status = 200
    try:
        context["row"] = target.row()
        if option or value:
            entity, where = target.entity_where()
            context["preview"] = limit_change_preview(
                actor=request.user, entity=entity, where=where, options=[_option(option, value)]
            )
    except ServiceError as exc:
        context["error"], status = str(exc), exc.status
    return render(request, "limits/change.html", context, status=status)


def _spec(request: HttpRequest) -> ActionSpec:
    target = Target.from_query(request.POST)
    back = reverse("limits-change") + "?" + urlencode(target.query())

    def perform(actor: Any, values: dict[str, str], reason: str) -> str:
        row = target.row()
        entity, where = target.entity_where()
        setting = _option(values["option"], values["value"])
        result = services.record_modify(actor=actor, entity=entity, where=where, options=[setting])
        action_audit_record(
            actor=actor, instance=row, action="limit_change", reason=reason, changes={"set": ["", setting]}
        )
        return f"{target.label}: {setting} set ({result.count} modified)."

    return ActionSpec(
        title=f"Change a limit of {target.label}",
        question=f"Change a limit of {target.label}?",
        perform=perform,
        back=back,
        fields=(
            Field("qos", "QOS"),
            Field("account", "Account"),
            Field("user", "User"),
            Field("partition", "Partition"),
            Field("option", "Limit", "MaxJobs", required=True),
            Field("value", "Value", "10", required=True),
        ),
        staff_only=True,
    )


def apply(request: HttpRequest) -> HttpResponse:
    return run_action(request, _spec(request))
