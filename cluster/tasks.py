"""Celery tasks: each runs one cycle function from cluster.cycles and returns a short string."""

from __future__ import annotations

import redis
from celery import shared_task
from django.conf import settings

from cluster import cycles

_redis: redis.Redis | None = None


@shared_task(name="fsched.schedule", ignore_result=True)
def schedule() -> str:
    # Clear the coalescing flag first: a request arriving during this pass queues another.
    _client().delete(_PENDING_KEY)
    return cycles.run_schedule()


@shared_task(name="fsched.event_schedule", ignore_result=True)
def event_schedule() -> str:
    """The quick pass requested by an event (coalesced through Redis)."""
    _client().delete(_PENDING_KEY)
    return cycles.run_event_schedule()


@shared_task(name="fsched.backfill", ignore_result=True)
def backfill() -> str:
    return cycles.run_backfill()


@shared_task(name="fsched.health", ignore_result=True)
def health() -> str:
    return cycles.run_health()


@shared_task(name="fsched.power", ignore_result=True)
def power() -> str:
    return cycles.run_power()


@shared_task(name="fsched.usage", ignore_result=True)
def usage() -> str:
    return cycles.run_usage()


_PENDING_KEY = "fsched:schedule-requested"


def _client() -> redis.Redis:
    global _redis  # noqa: PLW0603 - one connection pool per process
    if _redis is None:
        _redis = redis.Redis.from_url(settings.REDIS_URL)
    return _redis


def request_schedule_pass() -> None:
    """Queue one pass unless one is already queued (SET NX): bursts coalesce."""
    if _client().set(_PENDING_KEY, "1", nx=True, ex=30):
        event_schedule.delay()
