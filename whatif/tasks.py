"""The what-if's Celery task (distributed mode): the runner in a worker."""

from __future__ import annotations

from celery import shared_task

from whatif import runner


@shared_task(name="fsched.whatif", ignore_result=True)
def run_whatif(pk: int) -> str:
    return runner.run(pk)
