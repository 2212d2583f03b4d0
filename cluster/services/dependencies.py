"""Job dependencies against the database: the pass's one read of the jobs they name, and
the checks of a new dependency (sbatch ``--dependency``, ``scontrol update Dependency=``).

The rules are in ``cluster.core.dependencies``; docs/dependencies.md says how a pass
evaluates them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache

from django.db.models import Q

from cluster.core import dependencies
from cluster.core.dependencies import WHOLE_ARRAY, Dependency, DependencyError, Facts, JobFacts, Kind, Term
from cluster.core.states import ACTIVE_JOB_STATES, JobState
from cluster.models import ClusterConfig, Job
from cluster.services.errors import ServiceError

_FACT_FIELDS = ("id", "state", "start_time", "end_time", "array_job_id", "array_task_id", "user", "name")


# Large enough for a queue of tens of thousands: a pass re-reads the same texts.
@lru_cache(maxsize=65536)
def stored(text: str) -> Dependency | None:
    """A job's stored dependency, parsed (many jobs share one: ``afterok:12``, ``singleton``)."""
    try:
        return dependencies.parse(text)
    except DependencyError:
        return None  # never stored so: checked before it is


# Parameters per statement: SQLite takes 32,766 at most; a queue that names more jobs
# than this (tens of thousands of distinct ids) is read in as many statements.
_IDS_PER_STATEMENT = 20_000


def read_facts(deps: Mapping[int, Dependency], singles: Iterable[tuple[str, str]]) -> Facts:
    """The jobs ``deps`` still wait on, in ONE statement: by id, by array id (``N_*``,
    ``N_T``, aftercorr) and, for singletons, the active jobs of those users and names."""
    ids, arrays, _ = dependencies.referenced(deps)
    keys = set(singles)
    if not (ids or arrays or keys):
        return Facts()
    wanted = sorted(ids)
    where = Q(pk__in=wanted[:_IDS_PER_STATEMENT]) if wanted else Q()
    if arrays:
        where |= Q(array_job_id__in=sorted(arrays))
    if keys:
        where |= Q(
            user__in=sorted({u for u, _ in keys}),
            name__in=sorted({n for _, n in keys}),
            state__in=[s.value for s in ACTIVE_JOB_STATES],
        )
    found = list(Job.objects.filter(where).values_list(*_FACT_FIELDS))
    for start in range(_IDS_PER_STATEMENT, len(wanted), _IDS_PER_STATEMENT):
        chunk = wanted[start : start + _IDS_PER_STATEMENT]
        found += Job.objects.filter(pk__in=chunk).values_list(*_FACT_FIELDS)
    return Facts.build(
        (
            JobFacts(
                job_id=job_id,
                state=state,
                started=(begun or end).timestamp() if (begun or end) else None,
                array_job_id=array_id,
                array_task_id=task,
                user=user,
                name=name,
            )
            for job_id, state, begun, end, array_id, task, user, name in found
        ),
        keys,
    )


def policy(cfg: ClusterConfig | None = None) -> dependencies.DependencyPolicy:
    """DependencyParameters in force (checked when slurm.conf was read)."""
    cfg = cfg or ClusterConfig.current()
    try:
        return dependencies.parse_dependency_parameters(cfg.options.get("DependencyParameters"))
    except ValueError:
        return dependencies.DependencyPolicy()


def checked(
    text: str,
    *,
    job_id: int | None = None,
    array_job_id: int | None = None,
    array_task_id: int | None = None,
) -> str:
    """A new dependency for job ``job_id`` (None: a job being submitted), resolved and in
    its stored form; ``""`` clears.  Refused as Slurm refuses it: bad syntax, an
    ``afterok``/``afternotok`` on a job that does not exist, or on the job itself, with
    ``Job dependency problem``; a circle of dependencies with ``Circular job dependency``."""
    if not isinstance(text, str):
        raise ServiceError(dependencies.DEPENDENCY_PROBLEM, field="dependency")
    try:
        dep = dependencies.parse(text)
    except DependencyError as exc:
        raise ServiceError(str(exc), field="dependency") from None
    if dep is None:
        return ""
    targets = [t for t in dep.terms if t.kind is not Kind.SINGLETON]
    plain = {t.job_id for t in targets if t.task is None}
    arrays = {t.job_id for t in targets if t.task is not None} | plain
    rows = Job.objects.filter(Q(pk__in=plain) | Q(array_job_id__in=arrays)).values_list(
        "id", "array_job_id", "array_task_id", "dependency"
    )
    known: dict[int, tuple[int | None, int | None, str]] = {}
    tasks: set[tuple[int, int | None]] = set()
    for found_id, array_id, task, depends in rows:
        known[found_id] = (array_id, task, depends)
        if array_id is not None:
            tasks.add((array_id, task))
            tasks.add((array_id, WHOLE_ARRAY))
    resolved = []
    for given in dep.terms:
        term = given
        if term.kind is not Kind.SINGLETON:
            term = _resolve(term, known, tasks)
            exists = term.job_id in known if term.task is None else (term.job_id, term.task) in tasks
            if not exists and term.kind in (Kind.AFTER_OK, Kind.AFTER_NOT_OK):
                # Slurm refuses these: it could never tell how the job ended.
                raise ServiceError(dependencies.DEPENDENCY_PROBLEM, field="dependency")
            if job_id is not None and _same_job(term, job_id, array_job_id, array_task_id):
                raise ServiceError(dependencies.DEPENDENCY_PROBLEM, field="dependency")
        resolved.append(term)
    dep = Dependency(tuple(resolved), dep.any_of)
    if job_id is not None:
        _check_circle(dep, job_id, array_job_id)
    return dep.text()


def _resolve(term: Term, known: Mapping[int, tuple], tasks: set[tuple[int, int | None]]) -> Term:
    """``afterok:N`` where N is an array's job id means the whole array (Slurm's ``N_*``)."""
    if term.task is None and term.job_id in known:
        array_id, task, _ = known[term.job_id]
        if array_id == term.job_id and task is not None:
            return replace(term, task=WHOLE_ARRAY)
    return term


def _same_job(term: Term, job_id: int, array_job_id: int | None, array_task_id: int | None) -> bool:
    if term.task == WHOLE_ARRAY:
        return term.job_id in (job_id, array_job_id)
    if term.task is not None:
        return array_job_id == term.job_id and array_task_id == term.task
    return term.job_id == job_id


def _check_circle(dep: Dependency, job_id: int, array_job_id: int | None) -> None:
    """``scontrol update``'s test for circles (A waits on B waits on A), as deep as
    DependencyParameters' max_depend_depth; one read per level."""
    depth = policy().max_depend_depth
    mine = {job_id} | ({array_job_id} if array_job_id is not None else set())
    frontier = set(dep.job_ids())
    seen: set[int] = set()
    for _ in range(depth):
        frontier -= seen
        if not frontier:
            return
        if frontier & mine:
            raise ServiceError(dependencies.CIRCULAR_DEPENDENCY, field="dependency")
        seen |= frontier
        texts = Job.objects.filter(
            Q(pk__in=frontier) | Q(array_job_id__in=frontier), state=JobState.PENDING
        ).exclude(dependency="")
        nxt: set[int] = set()
        for text in texts.values_list("dependency", flat=True):
            found = stored(text)
            if found is not None:
                nxt.update(found.job_ids())
        frontier = nxt
    if frontier & mine:
        raise ServiceError(dependencies.CIRCULAR_DEPENDENCY, field="dependency")
