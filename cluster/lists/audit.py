"""The audit log (django-auditlog's entries) as a list for staff: who changed what and when,
filtered by the object, the person and the time, in pages, exportable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from auditlog import get_logentry_model
from django.db.models import F, Q, QuerySet

from cluster.lists import params
from cluster.lists.params import PageSpan, ParamError, Sort
from cluster.lists.table import Cell, Row, aware, shown_time

LogEntry = get_logentry_model()
ACTIONS = {str(label): value for value, label in LogEntry.Action.choices}
_ACTION_LABELS = {value: label for label, value in ACTIONS.items()}
SORT_KEYS = ("time", "action", "model", "user")
_SORT_FIELDS = {
    "time": "timestamp",
    "action": "action",
    "model": "content_type__model",
    "user": "actor__username",
}
HEADERS = ("Time", "Action", "Type", "Object", "Changes", "By", "Address")
COLUMNS = (
    ("time", "Time", "nowrap"),
    ("action", "Action", ""),
    ("model", "Type", ""),
    ("", "Object", ""),
    ("", "Changes", "changes"),
    ("user", "By", ""),
    ("", "Address", ""),
)


@dataclass(frozen=True)
class AuditQuery(params.PagedQuery):
    model: str = ""  # app_label.model or model, as the Type column shows it
    object: str = ""  # the object's id, or words of its name
    users: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    sort: Sort = field(default_factory=Sort)
    page: int = 1
    per_page: int = params.DEFAULT_PER_PAGE

    def filter_pairs(self) -> list[tuple[str, str]]:
        return [
            ("model", self.model),
            ("object", self.object),
            ("user", ",".join(self.users)),
            ("action", ",".join(self.actions)),
            ("since", self.since.isoformat() if self.since else ""),
            ("until", self.until.isoformat() if self.until else ""),
        ]


def parse(query: Mapping[str, str]) -> AuditQuery:
    actions = params.comma_list(query, "action")
    for action in actions:
        if action not in ACTIONS:
            raise ParamError("action", f"Invalid action: {action} (one of {', '.join(ACTIONS)})")
    return AuditQuery(
        model=params.text(query, "model", max_len=201).lower(),
        object=params.text(query, "object"),
        users=tuple(params.comma_list(query, "user")),
        actions=tuple(actions),
        since=params.timestamp(query, "since"),
        until=params.timestamp(query, "until"),
        sort=params.sort(query, SORT_KEYS),
        page=params.positive_int(query, "page", 1),
        per_page=params.per_page(query),
    )


def entries(query: AuditQuery) -> QuerySet:
    q = Q()
    if query.model:
        app, _, model = query.model.rpartition(".")
        q &= Q(content_type__model=model) & (Q(content_type__app_label=app) if app else Q())
    if query.object:
        q &= Q(object_pk=query.object) | Q(object_repr__icontains=query.object)
    if query.users:
        q &= Q(actor__username__in=query.users)
    if query.actions:
        q &= Q(action__in=[ACTIONS[a] for a in query.actions])
    if query.since:
        q &= Q(timestamp__gte=aware(query.since))
    if query.until:
        q &= Q(timestamp__lt=aware(query.until))
    qs = LogEntry.objects.filter(q).select_related("content_type", "actor")
    sort = query.sort
    if not sort.key:
        return qs.order_by("-timestamp", "-id")
    key = F(_SORT_FIELDS[sort.key])
    tie = "-id" if sort.descending else "id"
    return qs.order_by(key.desc(nulls_last=True) if sort.descending else key.asc(nulls_first=True), tie)


def row(entry: LogEntry) -> Row:  # type: ignore[valid-type]
    ct = entry.content_type
    return Row(
        key=str(entry.pk),
        cells=[
            Cell(shown_time(entry.timestamp), css="nowrap"),
            Cell(_ACTION_LABELS.get(entry.action, str(entry.action))),
            Cell(f"{ct.app_label}.{ct.model}" if ct else ""),
            Cell(entry.object_repr, title=f"id {entry.object_pk}"),
            Cell(entry.changes_str, css="changes"),
            Cell(entry.actor.get_username() if entry.actor else ""),
            Cell(entry.remote_addr or ""),
        ],
    )


def audit_page(user: object, query: AuditQuery) -> tuple[list[Row], PageSpan]:
    qs = entries(query)
    span = params.page_span(query.page, query.per_page, qs.count())
    return [row(e) for e in qs[span.offset : span.offset + span.per_page]], span


def export_rows(user: object, query: AuditQuery) -> Iterable[list[object]]:
    return (row(e).values() for e in entries(query).iterator(chunk_size=2000))
