"""Cluster licenses (``Licenses=`` in slurm.conf) as a scheduler plugin (pure, no Django).

A job asking ``-L fluent:2`` starts only while 2 of fluent's count are free; otherwise it
pends with reason ``Licenses``.  ``-L fluent:2|ansys:1`` (Slurm's either-or form, plain
licenses only) starts when any one of them is free, and takes the first that is.

Requests are read with :func:`slurmwords.licenses.parse_license_request`, so hierarchical
resources in the same request (``-L fluent:1,flat:2``) and their plugin arguments are left
to :class:`hres.core.plugin.HresPlugin`.  What a running job holds comes from its
``LicensesAlloc`` when the adapter passes it (``held``): with the ``|`` form only that
says which license was taken.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from cluster.core.scheduler import Blocked, JobView, PartitionView, SchedulerPlugin, Snapshot, Start
from cluster.core.states import Reason
from slurmwords.hostlists import split_top
from slurmwords.licenses import Mode, parse_license_request


def plain_request(text: str, hres: Mapping[str, Mode] | None = None) -> list[tuple[str, int]]:
    """The cluster licenses a running job holds when nothing better is known: every plain
    item, or the first one of a ``|`` request.  Unparsable text holds nothing."""
    hres = hres or {}
    try:
        request = parse_license_request(text, hres=hres)
    except ValueError:
        return []
    items = request.plain(hres)
    if request.either:
        items = items[:1]
    return [(i.name, i.count) for i in items]


def is_either(text: str) -> bool:
    """Whether a request is Slurm's either-or form (``fluent:1|ansys:1``)."""
    return len(split_top(text.strip(), "|")) > 1


def limit_counts(request: str, *, running: bool, held: str = "") -> dict[str, int] | None:
    """The licenses a job's ``-L`` counts against the limits. The either-or form
    (``fluent:1|ansys:1``) takes one of them when the job starts: a waiting job counts
    none, a running one what its LicensesAlloc ``held`` says, else the first."""
    if not request:
        return None
    if is_either(request):
        if not running:
            return None
        if held:
            return dict(plain_alloc(held)) or None
    return dict(plain_request(request)) or None


def plain_alloc(text: str) -> list[tuple[str, int]]:
    """The cluster licenses in a ``LicensesAlloc`` (``fluent:2``); HRES entries skipped."""
    out = []
    for raw in split_top(text.replace("(", "[").replace(")", "]"), ","):
        entry = raw.strip()
        if not entry or "[" in entry:
            continue
        name, _, count = entry.partition(":")
        out.append((name, int(count) if count.isdigit() else 1))
    return out


class LicensePlugin(SchedulerPlugin):
    def __init__(
        self,
        totals: Mapping[str, int],
        hres: Mapping[str, Mode] | None = None,
        held: Mapping[int, Sequence[tuple[str, int]]] | None = None,
    ) -> None:
        self.totals = dict(totals)
        self.hres = dict(hres or {})
        self.held = dict(held or {})
        self.used: Counter[str] = Counter()
        self.taken: dict[int, list[tuple[str, int]]] = {}  # job id -> what it took this pass
        self._cache: dict[str, tuple[bool, list[tuple[str, int]]] | Blocked] = {}

    def _wants(self, job: JobView) -> tuple[bool, list[tuple[str, int]]] | Blocked:
        """(either, [(name, count)]) of the plain licenses requested, or why unreadable."""
        text = job.licenses
        found = self._cache.get(text)
        if found is None:
            try:
                request = parse_license_request(text, hres=self.hres)
                found = (request.either, [(i.name, i.count) for i in request.plain(self.hres)])
            except ValueError as exc:
                found = Blocked(Reason.LICENSES, str(exc))
            self._cache[text] = found
        return found

    def _choice(self, job: JobView) -> list[tuple[str, int]] | Blocked:
        wants = self._wants(job)
        if isinstance(wants, Blocked):
            return wants
        either, items = wants
        if not either:
            for name, count in items:
                free = self.totals.get(name, 0) - self.used[name]
                if count > free:
                    return Blocked(Reason.LICENSES, f"{name}: {count} requested, {max(free, 0)} free")
            return items
        for name, count in items:
            if count <= self.totals.get(name, 0) - self.used[name]:
                return [(name, count)]
        wanted = " or ".join(f"{n}:{c}" for n, c in items)
        return Blocked(Reason.LICENSES, f"{wanted}: none free")

    def begin_pass(self, snapshot: Snapshot) -> None:
        self.used = Counter()
        self.taken = {}
        for job in snapshot.running:
            if job.job_id in self.held:
                holds = self.held[job.job_id]
            elif job.licenses:
                holds = plain_request(job.licenses, self.hres)
            else:
                continue
            for name, count in holds:
                self.used[name] += count

    def job_gate(self, job: JobView, partition: PartitionView) -> Blocked | None:
        if not job.licenses:
            return None
        choice = self._choice(job)
        return choice if isinstance(choice, Blocked) else None

    def on_start(self, job: JobView, start: Start) -> None:
        if not job.licenses:
            return
        choice = self._choice(job)
        if isinstance(choice, Blocked):  # not expected: the gate let it through
            return
        self.taken[job.job_id] = choice
        for name, count in choice:
            self.used[name] += count
