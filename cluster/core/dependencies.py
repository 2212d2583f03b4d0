"""Job dependencies (``sbatch -d/--dependency``, ``scontrol update JobId= Dependency=``).

Pure: no Django and no clock; the caller passes ``now`` and a :class:`Facts` snapshot of
the jobs the dependencies name.  After Slurm's sbatch(1) ``--dependency`` and its
controller's dependency tests:

* ``after``, ``afterany``, ``afterok``, ``afternotok``, ``aftercorr`` followed by one or
  more ``:``-separated job ids, each ``N`` (a job, or a whole array when N is an array's
  job id), ``N_T`` (one array task), ``N_*`` (a whole array) or ``N_[1-3,5]`` (tasks),
  with an optional ``+minutes`` (``after`` only waits for it) and ``(failed)`` state;
  ``singleton``; a bare job id is ``afterany``; ``0`` or nothing clears.
* Terms joined by ``,`` must all be satisfied, by ``?`` one is enough; Slurm refuses a
  mix of the two (``Job dependency problem``).
* A term, once fulfilled, is dropped from the job's dependency, and once failed stays
  failed (Slurm's depend_state): the stored text is the state, so a pass re-reads only
  the jobs that the terms still waiting name.
* A job that is gone (never existed, or purged) lifts the term, as Slurm's controller does.

The printed form is Slurm's ``Dependency=`` / ``squeue %E``: the terms not fulfilled,
``afterok:12_*(unfulfilled)``, ``singleton(unfulfilled)``, ``after:5+10(unfulfilled)``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from cluster.core.states import FINISHED_JOB_STATES, JobState, Reason

DEPENDENCY_PROBLEM = "Job dependency problem"  # Slurm's ESLURM_DEPENDENCY
CIRCULAR_DEPENDENCY = "Circular job dependency"  # Slurm's ESLURM_CIRCULAR_DEPENDENCY
# A bound on what one job may name (Slurm has none; a stored dependency stays small).
MAX_TERMS = 1000
MAX_TEXT = 16_384
_MAX_ID = 2**63 - 1  # Job.id is a BigIntegerField
_MAX_TASK = 2**31 - 1
_MAX_MINUTES = 2**31 // 60


class DependencyError(ValueError):
    """A dependency Slurm refuses; the message is Slurm's (``Job dependency problem``)."""

    def __init__(self, message: str = DEPENDENCY_PROBLEM) -> None:
        super().__init__(message)


class Kind(enum.StrEnum):
    AFTER = "after"
    AFTER_ANY = "afterany"
    AFTER_OK = "afterok"
    AFTER_NOT_OK = "afternotok"
    AFTER_CORR = "aftercorr"
    SINGLETON = "singleton"


# Longest first: "afternotok:" must not be read as "after...".
_KINDS = (Kind.AFTER_NOT_OK, Kind.AFTER_CORR, Kind.AFTER_ANY, Kind.AFTER_OK, Kind.AFTER)


class TermState(enum.StrEnum):
    UNFULFILLED = "unfulfilled"
    FULFILLED = "fulfilled"
    FAILED = "failed"


WHOLE_ARRAY = -1  # ``N_*``: every task of array N


@dataclass(frozen=True, slots=True)
class Term:
    kind: Kind
    job_id: int = 0  # 0 for singleton
    task: int | None = None  # None: job N itself; WHOLE_ARRAY; else array task id
    minutes: int = 0  # the +time of ``after:N+minutes``
    state: TermState = TermState.UNFULFILLED

    def key(self) -> tuple[Kind, int, int | None]:
        return (self.kind, self.job_id, self.task)

    def text(self) -> str:
        """Slurm's printed form of the term with its state."""
        if self.kind is Kind.SINGLETON:
            return f"singleton({self.state})"
        target = str(self.job_id)
        if self.task == WHOLE_ARRAY:
            target += "_*"
        elif self.task is not None:
            target += f"_{self.task}"
        plus = f"+{self.minutes}" if self.minutes else ""
        return f"{self.kind}:{target}{plus}({self.state})"


@dataclass(frozen=True, slots=True)
class Dependency:
    terms: tuple[Term, ...]
    any_of: bool = False  # joined by "?" rather than ","

    def text(self) -> str:
        """``Dependency=`` as Slurm prints it: the terms not yet fulfilled ("" if none)."""
        sep = "?" if self.any_of else ","
        return sep.join(t.text() for t in self.terms if t.state is not TermState.FULFILLED)

    def job_ids(self) -> Iterable[int]:
        """The ids of the jobs (or arrays) the terms still waiting name."""
        return (
            t.job_id for t in self.terms if t.kind is not Kind.SINGLETON and t.state is TermState.UNFULFILLED
        )

    def waits_on_arrays(self) -> Iterable[int]:
        return (
            t.job_id
            for t in self.terms
            if t.state is TermState.UNFULFILLED
            and (t.task is not None or t.kind is Kind.AFTER_CORR)
            and t.kind is not Kind.SINGLETON
        )

    def has_singleton(self) -> bool:
        return any(t.kind is Kind.SINGLETON and t.state is TermState.UNFULFILLED for t in self.terms)


# --------------------------------------------------------------------------- parsing


def parse(text: str | None) -> Dependency | None:
    """A ``--dependency`` value (or a stored one, with its states); None clears it.

    Raises :class:`DependencyError` with Slurm's message for anything Slurm refuses."""
    text = (text or "").strip()
    if not text or text == "0":
        return None
    if len(text) > MAX_TEXT:
        raise DependencyError
    terms: list[Term] = []
    seen: set[tuple[Kind, int, int | None]] = set()
    separator = ""
    pos = 0
    while True:
        pos, parsed = _one_group(text, pos)
        for term in parsed:
            if term.key() not in seen:  # Slurm ignores a duplicate
                seen.add(term.key())
                terms.append(term)
        if len(terms) > MAX_TERMS:
            raise DependencyError
        if pos == len(text):
            break
        sep = text[pos]
        if sep not in ",?" or (separator and sep != separator):
            raise DependencyError
        separator = sep
        pos += 1
        if pos == len(text):
            raise DependencyError
    return Dependency(tuple(terms), any_of=separator == "?")


def _one_group(text: str, pos: int) -> tuple[int, list[Term]]:
    """One ``type:id[:id...]``, ``singleton`` or bare job id from ``pos``."""
    rest = text[pos:]
    if rest[:9].lower() == "singleton":
        pos += 9
        pos, state = _state(text, pos)
        return pos, [Term(Kind.SINGLETON, state=state)]
    if rest[:1].isdigit():
        # The old form: a job id alone is afterany.
        pos, job_id, tasks = _job_id(text, pos)
        return pos, [Term(Kind.AFTER_ANY, job_id, task) for task in tasks]
    for kind in _KINDS:
        prefix = kind.value + ":"
        if rest[: len(prefix)].lower() == prefix:
            pos += len(prefix)
            break
    else:
        raise DependencyError
    terms = []
    while True:
        pos, job_id, tasks = _job_id(text, pos)
        minutes = 0
        if pos < len(text) and text[pos] == "+":
            pos, minutes = _digits(text, pos + 1)
            if not 0 < minutes <= _MAX_MINUTES:
                raise DependencyError
        pos, state = _state(text, pos)
        terms += [Term(kind, job_id, task, minutes, state) for task in tasks]
        if pos < len(text) and text[pos] == ":":
            pos += 1
            continue
        return pos, terms


def _digits(text: str, pos: int) -> tuple[int, int]:
    end = pos
    while end < len(text) and text[end].isdigit() and end - pos <= 20:
        end += 1
    if end == pos or end - pos > 19:
        raise DependencyError
    return end, int(text[pos:end])


def _job_id(text: str, pos: int) -> tuple[int, int, list[int | None]]:
    """``N``, ``N_T``, ``N_*`` or ``N_[list]``: the job id and its task ids."""
    pos, job_id = _digits(text, pos)
    if not 0 < job_id <= _MAX_ID:
        raise DependencyError
    if pos >= len(text) or text[pos] != "_":
        return pos, job_id, [None]
    pos += 1
    if text[pos : pos + 1] == "*":
        return pos + 1, job_id, [WHOLE_ARRAY]
    if text[pos : pos + 1] == "[":
        end = text.find("]", pos)
        if end < 0:
            raise DependencyError
        return end + 1, job_id, list(_task_list(text[pos + 1 : end]))
    pos, task = _digits(text, pos)
    if task > _MAX_TASK:
        raise DependencyError
    return pos, job_id, [task]


def _task_list(text: str) -> list[int]:
    """``1-3,5``: array task ids in Slurm's bitmap notation (``N_[...]``)."""
    out: set[int] = set()
    for item in text.split(","):
        low, dash, high = item.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise DependencyError
        first, last = int(low), int(high) if dash else int(low)
        if last < first or last > _MAX_TASK or last - first + len(out) >= MAX_TERMS:
            raise DependencyError
        out.update(range(first, last + 1))
    if not out:
        raise DependencyError
    return sorted(out)


def _state(text: str, pos: int) -> tuple[int, TermState]:
    """An optional ``(state)``: only ``failed`` is kept, as Slurm lets no one write a
    dependency as already fulfilled."""
    if pos >= len(text) or text[pos] != "(":
        return pos, TermState.UNFULFILLED
    end = text.find(")", pos)
    if end < 0:
        raise DependencyError
    word = text[pos + 1 : end].strip().lower()
    return end + 1, TermState.FAILED if word == "failed" else TermState.UNFULFILLED


def parse_dependency_parameters(text: str | None) -> DependencyPolicy:
    """slurm.conf's ``DependencyParameters``: ``kill_invalid_depend``,
    ``disable_remote_singleton`` (no federation here: accepted, nothing to disable) and
    ``max_depend_depth=N`` (how deep ``scontrol update``'s circular test looks, 10 by
    default).  The words are case-insensitive; ValueError names one Slurm does not know."""
    kill = False
    depth = DEFAULT_MAX_DEPEND_DEPTH
    for raw in (text or "").split(","):
        word = raw.strip()
        key, eq, value = word.partition("=")
        key = key.strip().lower()
        if not key:
            continue
        if key == "kill_invalid_depend" and not eq:
            kill = True
        elif key == "disable_remote_singleton" and not eq:
            pass
        elif key == "max_depend_depth" and eq:
            if not value.strip().isdigit():
                raise ValueError(f"invalid max_depend_depth value '{value.strip()}' (a number, 0 or more)")
            depth = int(value)
        else:
            raise ValueError(
                f"invalid DependencyParameters word '{word}' "
                "(one of kill_invalid_depend, disable_remote_singleton, max_depend_depth=N)"
            )
    return DependencyPolicy(kill_invalid_depend=kill, max_depend_depth=depth)


DEFAULT_MAX_DEPEND_DEPTH = 10  # Slurm's default max_depend_depth


@dataclass(frozen=True, slots=True)
class DependencyPolicy:
    kill_invalid_depend: bool = False
    max_depend_depth: int = DEFAULT_MAX_DEPEND_DEPTH


# --------------------------------------------------------------------------- evaluation


class Verdict(enum.Enum):
    SATISFIED = "satisfied"
    WAITING = "waiting"  # Slurm's reason Dependency
    NEVER = "never"  # Slurm's reason DependencyNeverSatisfied


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What a dependency needs of a job it names."""

    job_id: int
    state: str
    started: float | None = None  # start time (or, for a job never started, its end)
    array_job_id: int | None = None
    array_task_id: int | None = None
    user: str = ""
    name: str = ""


# Slurm's IS_JOB_PENDING/IS_JOB_CONFIGURING: not started as far as ``after`` goes.
_NOT_STARTED = frozenset({JobState.PENDING, JobState.CONFIGURING, JobState.REQUEUED})
# What holds a singleton back: a job of the same user and name that runs or is suspended
# (Slurm's RUNNING with or without CONFIGURING or STOPPED), or one pending submitted before.
_SINGLETON_RUNNING = frozenset({JobState.RUNNING, JobState.CONFIGURING, JobState.SUSPENDED, JobState.STOPPED})


class _Status(NamedTuple):
    complete: bool  # ended COMPLETED (exit 0)
    completed: bool  # ended, in any final state
    pending: bool
    started: float | None


def _status(job: JobFacts) -> _Status:
    return _Status(
        complete=job.state == JobState.COMPLETED,
        completed=job.state in FINISHED_JOB_STATES,
        pending=job.state in _NOT_STARTED,
        started=job.started,
    )


@dataclass
class Facts:
    """The jobs a pass's dependencies name, read once per pass, with per-array and
    per-(user, name) summaries computed on first use: each term then costs O(1)."""

    by_id: dict[int, JobFacts] = field(default_factory=dict)
    by_task: dict[tuple[int, int], JobFacts] = field(default_factory=dict)
    arrays: dict[int, list[JobFacts]] = field(default_factory=dict)
    # (user, name) -> whether one runs, and the lowest id pending
    singles: dict[tuple[str, str], tuple[bool, int | None]] = field(default_factory=dict)
    _array_status: dict[int, _Status | None] = field(default_factory=dict)
    _job_status: dict[int, _Status] = field(default_factory=dict)

    @classmethod
    def build(cls, jobs: Iterable[JobFacts], singleton_keys: Iterable[tuple[str, str]] = ()) -> Facts:
        facts = cls()
        keys = set(singleton_keys)
        runs: dict[tuple[str, str], bool] = {}
        first: dict[tuple[str, str], int] = {}
        for job in jobs:
            facts.by_id[job.job_id] = job
            if job.array_job_id is not None and job.array_task_id is not None:
                facts.by_task[(job.array_job_id, job.array_task_id)] = job
                facts.arrays.setdefault(job.array_job_id, []).append(job)
            key = (job.user, job.name)
            if key in keys:
                if job.state in _SINGLETON_RUNNING:
                    runs[key] = True
                elif job.state == JobState.PENDING and (key not in first or job.job_id < first[key]):
                    first[key] = job.job_id
        facts.singles = {k: (runs.get(k, False), first.get(k)) for k in keys}
        return facts

    def job_status(self, job: JobFacts) -> _Status:
        """One job's status, computed once per pass however many terms name it."""
        status = self._job_status.get(job.job_id)
        if status is None:
            status = self._job_status[job.job_id] = _status(job)
        return status

    def array_status(self, array_job_id: int) -> _Status | None:
        """The array as a whole, as Slurm tests ``N_*``: complete when every task is,
        completed when every task has ended, pending while any task is; None if gone."""
        if array_job_id in self._array_status:
            return self._array_status[array_job_id]
        tasks = self.arrays.get(array_job_id)
        status = None
        if tasks:
            starts = [t.started for t in tasks if t.started is not None]
            status = _Status(
                complete=all(t.state == JobState.COMPLETED for t in tasks),
                completed=all(t.state in FINISHED_JOB_STATES for t in tasks),
                pending=any(t.state in _NOT_STARTED for t in tasks),
                # ``after:N_*+M``: counted from the last task to start.
                started=max(starts) if len(starts) == len(tasks) else None,
            )
        self._array_status[array_job_id] = status
        return status


@dataclass(frozen=True, slots=True)
class Dependent:
    """The pending job whose dependency is evaluated."""

    job_id: int
    user: str = ""
    name: str = ""
    array_task_id: int | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    verdict: Verdict
    dependency: Dependency  # with the terms' new states

    def text(self) -> str:
        """What the job's dependency is now: "" once satisfied, as Slurm then flushes the
        whole list (an any-of's other terms too)."""
        return "" if self.verdict is Verdict.SATISFIED else self.dependency.text()


def evaluate(dep: Dependency, job: Dependent, facts: Facts, now: float) -> Outcome:
    """Test every term not yet decided, then the whole, as Slurm's test_job_dependency:
    with ``,`` one failed term fails the whole and every term must be fulfilled; with
    ``?`` one fulfilled term is enough and the whole fails only when every term has."""
    terms = dep.terms
    new = None
    for i, term in enumerate(terms):
        if term.state is not TermState.UNFULFILLED:
            continue
        state = _test(term, job, facts, now)
        if state is not TermState.UNFULFILLED:
            if new is None:
                new = list(terms)
            new[i] = Term(term.kind, term.job_id, term.task, term.minutes, state)
    if new is not None:
        dep = Dependency(tuple(new), dep.any_of)
        terms = dep.terms
    states = [t.state for t in terms]
    if dep.any_of:
        if TermState.FULFILLED in states:
            verdict = Verdict.SATISFIED
        elif TermState.UNFULFILLED in states:
            verdict = Verdict.WAITING
        else:
            verdict = Verdict.NEVER
    elif TermState.FAILED in states:
        verdict = Verdict.NEVER
    elif TermState.UNFULFILLED in states:
        verdict = Verdict.WAITING
    else:
        verdict = Verdict.SATISFIED
    return Outcome(verdict, dep)


def _target(term: Term, facts: Facts) -> _Status | None:
    if term.task == WHOLE_ARRAY:
        return facts.array_status(term.job_id)
    if term.task is not None:
        found = facts.by_task.get((term.job_id, term.task))
    else:
        found = facts.by_id.get(term.job_id)
    return facts.job_status(found) if found is not None else None


def _test(term: Term, job: Dependent, facts: Facts, now: float) -> TermState:
    kind = term.kind
    if kind is Kind.SINGLETON:
        runs, first = facts.singles.get((job.user, job.name), (False, None))
        blocked = runs or (first is not None and first < job.job_id)
        return TermState.UNFULFILLED if blocked else TermState.FULFILLED
    if kind is Kind.AFTER_CORR and job.array_task_id is not None:
        # Task T waits for task T of the array named; without one, for the whole.
        found = facts.by_task.get((term.job_id, job.array_task_id))
        if found is not None:
            return _ok(facts.job_status(found))
    status = _target(term, facts)
    if status is None:
        return TermState.FULFILLED  # the job is gone: Slurm lifts the dependency
    if kind is Kind.AFTER:
        if status.pending:
            return TermState.UNFULFILLED
        if not term.minutes:
            return TermState.FULFILLED
        if status.started is not None and now - status.started >= term.minutes * 60:
            return TermState.FULFILLED
        return TermState.UNFULFILLED
    if kind is Kind.AFTER_ANY:
        return TermState.FULFILLED if status.completed else TermState.UNFULFILLED
    if kind is Kind.AFTER_NOT_OK:
        if not status.completed:
            return TermState.UNFULFILLED
        return TermState.FAILED if status.complete else TermState.FULFILLED
    return _ok(status)  # afterok, and aftercorr on the whole


def _ok(status: _Status) -> TermState:
    if not status.completed:
        return TermState.UNFULFILLED
    return TermState.FULFILLED if status.complete else TermState.FAILED


def reason_of(verdict: Verdict) -> str | None:
    """The pending reason a verdict gives (None: the dependency holds nothing back)."""
    if verdict is Verdict.WAITING:
        return Reason.DEPENDENCY
    if verdict is Verdict.NEVER:
        return Reason.DEPENDENCY_NEVER_SATISFIED
    return None


def referenced(deps: Mapping[int, Dependency]) -> tuple[set[int], set[int], bool]:
    """The job ids and array ids a pass must read for ``deps``, and whether any
    singleton needs the (user, name) summaries."""
    ids: set[int] = set()
    arrays: set[int] = set()
    single = False
    for dep in deps.values():
        ids.update(dep.job_ids())
        arrays.update(dep.waits_on_arrays())
        single = single or dep.has_singleton()
    return ids, arrays, single


__all__ = [
    "CIRCULAR_DEPENDENCY",
    "DEPENDENCY_PROBLEM",
    "WHOLE_ARRAY",
    "Dependency",
    "DependencyError",
    "DependencyPolicy",
    "Dependent",
    "Facts",
    "JobFacts",
    "Kind",
    "Outcome",
    "Term",
    "TermState",
    "Verdict",
    "evaluate",
    "parse",
    "parse_dependency_parameters",
    "reason_of",
    "referenced",
]
