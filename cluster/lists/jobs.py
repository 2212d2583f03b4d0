"""The console's job list: filters, sort, pages, array folding and its export.

:func:`visible_jobs` is where every job-list query starts, so one function decides which
jobs a person may see.  The list then narrows them with ``squeue``'s filters (``-j``,
``-n``, ``-u``, ``-A``, ``-q``, ``-p``, ``-t``, ``-w``, ``-L``) and sacct's ``--reason``,
all read from GET parameters, so a filtered page is a link and its live refresh asks for
the same rows.

Pending tasks of an array fold into one row per (array, reason, partition), ``12_[3-9%2]``,
as squeue prints an array's tasks that have not started; ``expand=12`` (or ``array=tasks``
for every array, squeue's ``--array``) lists them one per row.  Folding is done in the query,
so the count and the pages are of the rows shown.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Case, DurationField, ExpressionWrapper, F, Func, Min, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce

from cluster import visibility
from cluster.core import hostlists
from cluster.core.states import HOLDING_JOB_STATES, JOB_STATE_COMPACT, JobState
from cluster.lists import params
from cluster.lists.node_match import nodelist_pattern
from cluster.lists.params import PageSpan, ParamError, Sort
from cluster.models import Job
from cluster.selectors import ACTIVE_STATES, JOB_ROW_FIELDS, JobRow, job_row
from slurmwords.hostlists import fold_ids

MAX_JOB_ID = 2**63 - 1  # Job.id is a BigIntegerField
MAX_TASK_ID = 2**31 - 1
# The most node names a node filter may expand to: it is one bound variable per name.
MAX_FILTER_NODES = params.MAX_LIST_VALUES

# sort parameter -> the column it sorts by; every order ends with the job id, so rows with
# equal keys keep one order from page to page.
SORT_KEYS = ("id", "name", "user", "account", "qos", "partition", "state", "time", "nodes", "reason")
# squeue shows running work first, then what waits.
_STATE_ORDER = {
    s: i for i, s in enumerate(("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED", "PENDING"))
}
_BY_COMPACT = {code: state for state, code in JOB_STATE_COMPACT.items()}
_LAYER_NAME = re.compile(r"^[A-Za-z0-9_.-]+(\([A-Za-z0-9_.-]+\))?$")


def visible_jobs(user: object) -> QuerySet[Job]:
    """The jobs ``user`` may see in the console's lists: every list query starts here, with
    cluster.visibility's rule (all jobs, or with PrivateData=jobs the user's own, its
    coordinated accounts' and everything for staff)."""
    return Job.objects.filter(visibility.visible_jobs(user))


@dataclass(frozen=True)
class JobQuery(params.PagedQuery):
    """The job list's parameters, parsed."""

    ids: tuple[str, ...] = ()
    name: str = ""
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    qos: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    state: str = ""  # "" = active (squeue's default), "all", or a comma list as given
    states: tuple[str, ...] | None = ACTIVE_STATES  # None = every state
    reasons: tuple[str, ...] = ()
    node: str = ""
    nodes: tuple[str, ...] = ()
    layer: str = ""
    expand: tuple[int, ...] = ()
    all_tasks: bool = False  # squeue --array: every array task on its own row
    sort: Sort = field(default_factory=Sort)
    page: int = 1
    per_page: int = params.DEFAULT_PER_PAGE

    def filter_pairs(self) -> list[tuple[str, str]]:
        return [
            ("state", self.state),
            ("id", ",".join(self.ids)),
            ("name", self.name),
            ("user", ",".join(self.users)),
            ("account", ",".join(self.accounts)),
            ("qos", ",".join(self.qos)),
            ("partition", ",".join(self.partitions)),
            ("reason", ",".join(self.reasons)),
            ("node", self.node),
            ("layer", self.layer),
            ("expand", ",".join(map(str, self.expand))),
            ("array", "tasks" if self.all_tasks else ""),
        ]

    def filter_string(self) -> str:
        """This list's filters and order without its page (what an export takes)."""
        return self.query_string(page=1)


def _job_state(word: str) -> JobState | None:
    word = word.strip().upper()
    if word in JobState.__members__:
        return JobState(word)
    return _BY_COMPACT.get(word)


def _states(raw: str) -> tuple[str, tuple[str, ...] | None]:
    if not raw:
        return "", ACTIVE_STATES
    if raw.lower() == "all":
        return "all", None
    wanted = []
    for word in raw.split(","):
        if not word.strip():
            continue
        state = _job_state(word)
        if state is None:
            raise ParamError("state", f"Invalid job state specified: {word.strip()}")
        wanted.append(state.value)
    return raw.upper(), tuple(dict.fromkeys(wanted))


def _ids(values: list[str]) -> tuple[str, ...]:
    """squeue -j's words: ``12`` (a job, or every task of array 12) or ``12_3`` (a task)."""
    for value in values:
        base, sep, task = value.partition("_")
        ok = base.isascii() and base.isdigit() and len(base) <= 19 and int(base) <= MAX_JOB_ID
        if sep:
            ok = ok and task.isascii() and task.isdigit() and len(task) <= 10 and int(task) <= MAX_TASK_ID
        if not ok:
            raise ParamError("id", f"Invalid job id specified: {value}")
    return tuple(values)


def _expand(values: list[str]) -> tuple[int, ...]:
    out = []
    for value in values:
        if not (value.isascii() and value.isdigit() and len(value) <= 19 and int(value) <= MAX_JOB_ID):
            raise ParamError("expand", f"Invalid job id specified: {value}")
        out.append(int(value))
    return tuple(sorted(set(out)))


def _nodes(text: str) -> tuple[str, ...]:
    if not text:
        return ()
    try:
        return tuple(hostlists.expand(text, limit=MAX_FILTER_NODES, what="node"))
    except ValueError as exc:  # HostlistError, HostlistTooLarge
        raise ParamError("node", str(exc)) from None


def parse(query: Mapping[str, str]) -> JobQuery:
    """The list's parameters from a request's GET; :class:`ParamError` for any it cannot take."""
    state, states = _states(params.text(query, "state", max_len=512))
    layer = params.text(query, "layer", max_len=130)
    if layer and not _LAYER_NAME.match(layer):
        raise ParamError(
            "layer", f"Invalid layer: {layer} (a resource name, a layer name or resource(layer))"
        )
    array = params.text(query, "array", max_len=16)
    if array not in ("", "tasks"):
        raise ParamError("array", f"Invalid array: {array} (only 'tasks', one row per array task)")
    node = params.text(query, "node", max_len=1024)
    return JobQuery(
        ids=_ids(params.comma_list(query, "id")),
        name=params.text(query, "name"),
        users=tuple(params.comma_list(query, "user")),
        accounts=tuple(params.comma_list(query, "account")),
        qos=tuple(params.comma_list(query, "qos")),
        partitions=tuple(params.comma_list(query, "partition")),
        state=state,
        states=states,
        reasons=tuple(params.comma_list(query, "reason")),
        node=node,
        nodes=_nodes(node),
        layer=layer,
        expand=_expand(params.comma_list(query, "expand")),
        all_tasks=array == "tasks",
        sort=params.sort(query, SORT_KEYS),
        page=params.positive_int(query, "page", 1),
        per_page=params.per_page(query),
    )


# --- the query -----------------------------------------------------------------------------


def _id_q(values: Iterable[str]) -> Q:
    jobs: list[int] = []
    q = Q(pk__in=[])
    for value in values:
        base, sep, task = value.partition("_")
        if sep:
            q |= Q(array_job_id=int(base), array_task_id=int(task))
        else:
            jobs.append(int(base))
    # squeue -j 12: the job 12, or every task of array 12.
    return q | Q(pk__in=jobs) | Q(array_job_id__in=jobs)


def _node_q(nodes: Iterable[str]) -> Q:
    """Jobs holding one of the nodes now (squeue -w), and jobs whose NodeList holds one,
    folded or not (``node[01-03]``: cluster.lists.node_match), as sacct -N finds them."""
    # Only jobs holding nodes have an allocation: the state test spares the JSON read.
    q = Q(state__in=[s.value for s in HOLDING_JOB_STATES], alloc__has_any_keys=list(nodes))
    for name in nodes:
        head = name.rstrip("0123456789")
        # LIKE first: the regular expression is a function call per row on SQLite, and a
        # NodeList that holds the node names it or folds its head ("node[").
        maybe = Q(node_list__contains=name) | (Q(node_list__contains=head + "[") if head else Q())
        q |= maybe & Q(node_list__regex=nodelist_pattern(name))
    return q


def _layer_q(layer: str) -> Q:
    """Jobs asking for or holding an HRES resource or layer, read from their Licenses and
    LicensesAlloc text (``power:1000``, ``power(rack1*1000,row1*1000):1000``) without
    asking the hres app: ``power`` matches the resource, ``rack1`` a layer of any resource,
    ``power(rack1)`` that layer of that resource."""
    if "(" in layer:
        resource, _, name = layer[:-1].partition("(")
        pattern = rf"(^|,){re.escape(resource)}\(([^)]*,)?{re.escape(name)}\*"
        return Q(licenses_alloc__contains=name) & Q(licenses_alloc__regex=pattern)
    as_resource = rf"(^|[,|]){re.escape(layer)}([:(\[,|]|$)"
    as_layer = rf"[(,]{re.escape(layer)}\*"
    return (Q(licenses__contains=layer) & Q(licenses__regex=as_resource)) | (
        Q(licenses_alloc__contains=layer)
        & (Q(licenses_alloc__regex=as_resource) | Q(licenses_alloc__regex=as_layer))
    )


def filter_q(query: JobQuery) -> Q:
    q = Q()
    if query.ids:
        q &= _id_q(query.ids)
    if query.name:
        q &= Q(name__icontains=query.name)
    for column, values in (
        ("user", query.users),
        ("account", query.accounts),
        ("qos", query.qos),
        ("partition", query.partitions),
        ("reason", query.reasons),
    ):
        if values:
            q &= Q(**{f"{column}__in": list(values)})
    # squeue -j without -t lists the jobs named whatever their state.
    states = None if (query.ids and not query.state) else query.states
    if states is not None:
        q &= Q(state__in=list(states))
    if query.nodes:
        q &= _node_q(query.nodes)
    if query.layer:
        q &= _layer_q(query.layer)
    return q


def _foldable(query: JobQuery) -> Q:
    """Rows folded into their array's row: pending tasks of an array not expanded."""
    q = Q(state=JobState.PENDING, array_job_id__isnull=False, array_task_id__isnull=False)
    if query.expand:
        q &= ~Q(array_job_id__in=list(query.expand))
    return q


def listed_jobs(user: object, query: JobQuery) -> QuerySet[Job]:
    """The rows of the list: one per job, one per folded array group (its lowest task)."""
    matching = visible_jobs(user).filter(filter_q(query))
    if query.all_tasks:
        return matching
    foldable = _foldable(query)
    firsts = (
        matching.filter(foldable)
        .order_by()
        .values("array_job_id", "reason", "partition")
        .annotate(first=Min("id"))
        .values("first")
    )
    return matching.filter(~foldable | Q(pk__in=firsts))


class RunTime(Func):
    """squeue's TIME as a sort key: the run time so far, or until the end; 0 before the start.

    On SQLite Django subtracts datetimes in a Python function called per row (a second for
    100,000 jobs); julianday() does it in SQLite itself.
    """

    output_field = DurationField()

    def __init__(self, now: datetime) -> None:
        ran = ExpressionWrapper(
            Coalesce(F("end_time"), Value(now)) - F("start_time"), output_field=DurationField()
        )
        super().__init__(Coalesce(ran, Value(timedelta(0)), output_field=DurationField()))
        self.now = now

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return compiler.compile(self.source_expressions[0])

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        now = connection.ops.adapt_datetimefield_value(self.now)
        sql = "COALESCE(julianday(COALESCE(end_time, %s)) - julianday(start_time), 0)"
        return sql, [now]


def _order(qs: QuerySet[Job], query: JobQuery, now: datetime) -> QuerySet[Job]:
    sort = query.sort
    if not sort.key:
        if query.states is None or any(s not in ACTIVE_STATES for s in query.states):
            return qs.order_by("-id")  # history: newest first
        rank = Case(*(When(state=s, then=Value(i)) for s, i in _STATE_ORDER.items()), default=Value(9))
        return qs.annotate(state_rank=rank).order_by("state_rank", "-priority", "id")
    if sort.key == "state":
        rank = Case(*(When(state=s, then=Value(i)) for s, i in _STATE_ORDER.items()), default=Value(9))
        qs, key = qs.annotate(sort_key=rank), F("sort_key")
    elif sort.key == "time":
        qs, key = qs.annotate(sort_key=RunTime(now)), F("sort_key")
    elif sort.key == "nodes":
        key = F("min_nodes")
    elif sort.key == "id":
        return qs.order_by("-id" if sort.descending else "id")
    else:
        key = F(sort.key)
    first = key.desc() if sort.descending else key.asc()
    return qs.order_by(first, "-id" if sort.descending else "id")


# --- rows ----------------------------------------------------------------------------------

# A JobRow's fields, and those the list adds: its ACCOUNT and QOS columns, an array's throttle.
_ROW_FIELDS = (*JOB_ROW_FIELDS, "array_max_tasks", "account", "qos")


@dataclass(frozen=True)
class ListRow:
    """A row of the list: a job, or an array's folded pending tasks."""

    job: JobRow
    account: str
    qos: str
    array_job_id: int | None
    folded: str  # "3-9%2" for a folded row, "" otherwise
    tasks: int  # how many tasks the row stands for (1 for a job)
    expanded: bool  # a pending task of an array listed one per row

    @property
    def display_id(self) -> str:
        return f"{self.array_job_id}_[{self.folded}]" if self.folded else self.job.display_id

    def cells(self) -> list[object]:
        """The row as the table shows it, in EXPORT_HEADERS' order."""
        j = self.job
        return [
            self.display_id,
            j.name,
            j.user,
            self.account,
            self.qos,
            j.partition,
            j.state,
            j.time,
            j.nodes,
            j.nodelist,
        ]


HEADERS = (
    "JOBID",
    "NAME",
    "USER",
    "ACCOUNT",
    "QOS",
    "PARTITION",
    "STATE",
    "TIME",
    "NODES",
    "NODELIST(REASON)",
)


def _groups(user: object, query: JobQuery, jobs: list[Job]) -> dict[tuple, list[int]]:
    """(array, reason, partition) -> task ids of the folded rows among ``jobs`` (one query)."""
    arrays = {j.array_job_id for j in jobs if j.state == JobState.PENDING and j.array_job_id is not None}
    if query.all_tasks or not arrays:
        return {}
    rows = (
        visible_jobs(user)
        .filter(filter_q(query) & _foldable(query), array_job_id__in=sorted(arrays))
        .values_list("array_job_id", "reason", "partition", "array_task_id")
    )
    groups: dict[tuple, list[int]] = defaultdict(list)
    for array_id, reason, partition, task in rows:
        groups[array_id, reason, partition].append(task)
    return groups


def _rows(user: object, query: JobQuery, jobs: list[Job], now: datetime) -> list[ListRow]:
    groups = _groups(user, query, jobs)
    out = []
    for job in jobs:
        tasks = groups.get((job.array_job_id, job.reason, job.partition), [])
        folded = ""
        if len(tasks) > 1:
            folded = fold_ids(tasks) + (f"%{job.array_max_tasks}" if job.array_max_tasks else "")
        out.append(
            ListRow(
                job=job_row(job, now),
                account=job.account,
                qos=job.qos,
                array_job_id=job.array_job_id,
                folded=folded,
                tasks=max(1, len(tasks)),
                expanded=job.array_job_id in query.expand and job.state == JobState.PENDING,
            )
        )
    return out


@dataclass(frozen=True)
class JobListPage:
    rows: list[ListRow]
    span: PageSpan


def job_page(user: object, query: JobQuery, *, now: datetime) -> JobListPage:
    """One page of the list: a count, then the page's rows (a page past the end is the last)."""
    listed = listed_jobs(user, query)
    span = params.page_span(query.page, query.per_page, listed.count())
    # The page's ids first, then its rows: the database sorts narrow (key, id) pairs rather
    # than whole rows, which is what keeps a deep page of a sorted 100,000-job list fast.
    ordered = _order(listed, query, now).values_list("id", flat=True)
    page_ids = list(ordered[span.offset : span.offset + span.per_page])
    by_id = {j.id: j for j in Job.objects.filter(pk__in=page_ids).only(*_ROW_FIELDS)}
    jobs = [by_id[i] for i in page_ids if i in by_id]
    return JobListPage(rows=_rows(user, query, jobs, now), span=span)


def job_export_rows(
    user: object, query: JobQuery, *, now: datetime, chunk: int = 2000
) -> Iterable[list[object]]:
    """Every row of the filtered list (all pages), as the table shows them."""
    ordered = _order(listed_jobs(user, query), query, now).only(*_ROW_FIELDS)
    batch: list[Job] = []
    for job in ordered.iterator(chunk_size=chunk):
        batch.append(job)
        if len(batch) == chunk:
            yield from (row.cells() for row in _rows(user, query, batch, now))
            batch = []
    if batch:
        yield from (row.cells() for row in _rows(user, query, batch, now))
