"""The event list: job, node and configuration changes, newest first, in pages.

Filters after ``sacctmgr show event``'s (``nodes=``, ``start=``, ``end=``) plus the job and
the kind of change; every one a GET parameter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import F, Q, QuerySet
from django.urls import reverse

from cluster import visibility
from cluster.core import hostlists
from cluster.lists import params
from cluster.lists.params import PageSpan, ParamError, Sort
from cluster.lists.table import Cell, Row, aware, shown_time
from cluster.models import Event, Job

SORT_KEYS = ("time", "kind", "user")
HEADERS = ("Time", "Kind", "Object", "Change", "Reason", "By")
COLUMNS = (
    ("time", "Time", "nowrap"),
    ("kind", "Kind", ""),
    ("", "Object", "nowrap"),
    ("", "Change", ""),
    ("", "Reason", ""),
    ("user", "By", ""),
)
KINDS = tuple(k.value for k in Event.Kind)


@dataclass(frozen=True)
class EventQuery(params.PagedQuery):
    kinds: tuple[str, ...] = ()
    job: str = ""
    node: str = ""
    nodes: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    sort: Sort = field(default_factory=Sort)
    page: int = 1
    per_page: int = params.DEFAULT_PER_PAGE

    def filter_pairs(self) -> list[tuple[str, str]]:
        return [
            ("kind", ",".join(self.kinds)),
            ("job", self.job),
            ("node", self.node),
            ("user", ",".join(self.users)),
            ("since", self.since.isoformat() if self.since else ""),
            ("until", self.until.isoformat() if self.until else ""),
        ]


def parse(query: Mapping[str, str]) -> EventQuery:
    kinds = params.comma_list(query, "kind")
    for kind in kinds:
        if kind not in KINDS:
            raise ParamError("kind", f"Invalid kind: {kind} (one of {', '.join(KINDS)})")
    job = params.text(query, "job", max_len=19)
    if job and not (job.isascii() and job.isdigit()):
        raise ParamError("job", f"Invalid job id specified: {job}")
    node = params.text(query, "node", max_len=1024)
    try:
        nodes = tuple(hostlists.expand(node, limit=params.MAX_LIST_VALUES, what="node")) if node else ()
    except ValueError as exc:
        raise ParamError("node", str(exc)) from None
    return EventQuery(
        kinds=tuple(kinds),
        job=job,
        node=node,
        nodes=nodes,
        users=tuple(params.comma_list(query, "user")),
        since=params.timestamp(query, "since"),
        until=params.timestamp(query, "until"),
        sort=params.sort(query, SORT_KEYS),
        page=params.positive_int(query, "page", 1),
        per_page=params.per_page(query),
    )


def events(query: EventQuery, user: object = None) -> QuerySet[Event]:
    """The events matching the query that ``user`` may see (cluster.visibility): with
    PrivateData=jobs not the events of others' jobs, with PrivateData=nodes not the nodes'."""
    q = Q()
    if user is not None:
        seen = visibility.visible_jobs(user)
        if visibility.hides(user, "jobs"):
            q &= Q(job_id__isnull=True) | Q(job_id__in=Job.objects.filter(seen).values("id"))
        if visibility.hides(user, "nodes"):
            q &= Q(job_id__isnull=False)
    if query.kinds:
        q &= Q(kind__in=query.kinds)
    if query.job:
        q &= Q(job_id=int(query.job))
    if query.nodes:
        q &= Q(node__in=query.nodes)
    if query.users:
        q &= Q(user__in=query.users)
    if query.since:
        q &= Q(time__gte=aware(query.since))
    if query.until:
        q &= Q(time__lt=aware(query.until))
    qs = Event.objects.filter(q)
    sort = query.sort
    if not sort.key:
        return qs.order_by("-time", "-id")
    key = F(sort.key)
    tie = "-id" if sort.descending else "id"
    return qs.order_by(key.desc() if sort.descending else key.asc(), tie)


def row(event: Event) -> Row:
    if event.job_id:
        subject = Cell(f"job {event.job_id}", reverse("job", args=[event.job_id]))
    elif event.node:
        subject = Cell(event.node, reverse("node", args=[event.node]))
    else:
        subject = Cell(event.kind)
    change = f"{event.old_state} → {event.new_state}" if event.old_state else event.new_state
    return Row(
        key=str(event.id),
        cells=[
            Cell(shown_time(event.time), css="nowrap"),
            Cell(event.kind),
            subject,
            Cell(change, css="change"),
            Cell(event.reason),
            Cell(event.user),
        ],
        data={"kind": event.kind},
    )


def event_page(user: object, query: EventQuery) -> tuple[list[Row], PageSpan]:
    qs = events(query, user)
    span = params.page_span(query.page, query.per_page, qs.count())
    return [row(e) for e in qs[span.offset : span.offset + span.per_page]], span


def export_rows(user: object, query: EventQuery) -> Iterable[list[object]]:
    return (row(e).values() for e in events(query, user).iterator(chunk_size=2000))
