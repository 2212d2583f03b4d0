"""The ``SLURM_RESUME_FILE`` document handed to ResumeProgram (Slurm's power_save.html,
"ResumeProgram").

Pure: builds the JSON text; the adapter writes it to a temporary file, points
``SLURM_RESUME_FILE`` at it, and removes it when the program has read it (the page
promises ten seconds).  Layout as in the page's example::

    {"all_nodes_resume": "cloud[1-3,7-8]",
     "jobs": [{"exclusive": "NO", "extra": null, "features": "c1,c2", "job_id": 140814,
               "layout": null, "nodes_alloc": "cloud[1-4]", "nodes_resume": "cloud[1-3]",
               "oversubscribe": "OK", "partition": "cloud", "reservation": null}, ...]}

Keys are sorted, jobs are in job id order, and an unset reservation / features / extra /
layout is ``null``.  ``exclusive`` is NO, NODE, USER, MCS or TOPO and ``oversubscribe``
NO, YES or OK, as squeue prints them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from cluster.core.hostlists import fold

EXCLUSIVE_VALUES = ("NO", "NODE", "USER", "MCS", "TOPO")
OVERSUBSCRIBE_VALUES = ("NO", "YES", "OK")


class ResumeJob(Protocol):
    """What the document needs of a job (``power.core.policy.PowerJob`` has it)."""

    @property
    def job_id(self) -> int: ...
    @property
    def nodes(self) -> Sequence[str]: ...
    @property
    def partition(self) -> str: ...
    @property
    def reservation(self) -> str: ...
    @property
    def features(self) -> str: ...
    @property
    def exclusive(self) -> str: ...
    @property
    def oversubscribe(self) -> str: ...
    @property
    def extra(self) -> str: ...
    @property
    def layout(self) -> str: ...


def _or_null(value: str | None) -> str | None:
    return value if value else None


def resume_document(resume_nodes: Iterable[str], jobs: Iterable[ResumeJob]) -> dict[str, Any]:
    """The document for one ResumeProgram run resuming ``resume_nodes``.

    Every job allocated at least one of those nodes is listed; ``nodes_resume`` is the
    part of its allocation being resumed by this run.  ``ValueError`` for an exclusive /
    oversubscribe value Slurm does not print.
    """
    resuming = set(resume_nodes)
    entries = []
    for job in sorted(jobs, key=lambda j: j.job_id):
        alloc = list(job.nodes)
        mine = [n for n in alloc if n in resuming]
        if not mine:
            continue
        exclusive = (job.exclusive or "NO").upper()
        oversubscribe = (job.oversubscribe or "OK").upper()
        if exclusive not in EXCLUSIVE_VALUES:
            raise ValueError(f"job {job.job_id}: exclusive={job.exclusive!r} not one of {EXCLUSIVE_VALUES}")
        if oversubscribe not in OVERSUBSCRIBE_VALUES:
            raise ValueError(
                f"job {job.job_id}: oversubscribe={job.oversubscribe!r} not one of {OVERSUBSCRIBE_VALUES}"
            )
        entries.append(
            {
                "exclusive": exclusive,
                "extra": _or_null(job.extra),
                "features": _or_null(job.features),
                "job_id": job.job_id,
                "layout": _or_null(job.layout),
                "nodes_alloc": fold(alloc),
                "nodes_resume": fold(mine),
                "oversubscribe": oversubscribe,
                "partition": job.partition,
                "reservation": _or_null(job.reservation),
            }
        )
    return {"all_nodes_resume": fold(resuming), "jobs": entries}


def resume_file_text(resume_nodes: Iterable[str], jobs: Iterable[ResumeJob]) -> str:
    """:func:`resume_document` as JSON text (sorted keys, indented like the page's example)."""
    return json.dumps(resume_document(resume_nodes, jobs), indent=1, sort_keys=True) + "\n"


__all__ = ["EXCLUSIVE_VALUES", "OVERSUBSCRIBE_VALUES", "ResumeJob", "resume_document", "resume_file_text"]
