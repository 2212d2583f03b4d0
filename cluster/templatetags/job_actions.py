"""Which of the job page's actions apply to a job in a given state (the services refuse
the others with Slurm's words; the page only leaves out buttons that cannot work)."""

from __future__ import annotations

from django import template

from cluster.core.states import FINISHED_JOB_STATES, HOLDING_JOB_STATES

register = template.Library()


@register.filter
def job_finished(state: str) -> bool:
    return state in FINISHED_JOB_STATES


@register.filter
def job_requeueable(state: str) -> bool:
    # scontrol requeue: a running or finished batch job goes back to the queue.
    return state in HOLDING_JOB_STATES or state in FINISHED_JOB_STATES
