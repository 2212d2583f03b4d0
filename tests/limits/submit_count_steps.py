"""Random writes to the job table, by every route a job's key or state can change, for the
tests of the submit limits' counts (limits/submit_counts.py) on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime

from django.db import connection, transaction

from cluster.core.states import JobState
from cluster.models import Job
from limits import submit_counts

NOW = datetime(2026, 1, 1, tzinfo=UTC)
USERS = ("alice", "bob", "carol")
ACCOUNTS = ("physics", "chemistry", "")
PARTITIONS = ("debug", "batch")
QOS = ("normal", "high")
STATES = tuple(JobState)


class _Undo(Exception):
    pass


def assert_counts_exact() -> None:
    assert submit_counts.counts() == submit_counts.recount()


def steps(rng: random.Random) -> list[Callable[[], None]]:
    """Each a write to random jobs; the counts must equal a recount after any of them."""
    next_id = [Job.objects.order_by("-id").values_list("id", flat=True).first() or 0]

    def job(**extra) -> Job:
        next_id[0] += 1
        fields = {
            "user": rng.choice(USERS), "account": rng.choice(ACCOUNTS), "partition": rng.choice(PARTITIONS),
            "qos": rng.choice(QOS), "state": rng.choice(STATES), "submit_time": NOW, **extra,
        }  # fmt: skip
        return Job(id=next_id[0], **fields)

    def some() -> list[int]:
        ids = list(Job.objects.values_list("id", flat=True))
        return rng.sample(ids, min(len(ids), rng.randrange(1, 6)))

    def bulk_create():
        Job.objects.bulk_create([job() for _ in range(rng.randrange(1, 8))])

    def create_one():
        job().save(force_insert=True)

    def state_update():
        Job.objects.filter(id__in=some()).update(state=rng.choice(STATES))

    def key_update():
        field = rng.choice(("user", "account", "partition", "qos"))
        pool = {"user": USERS, "account": ACCOUNTS, "partition": PARTITIONS, "qos": QOS}[field]
        Job.objects.filter(id__in=some()).update(**{field: rng.choice(pool)})

    def key_and_state_update():
        Job.objects.filter(id__in=some()).update(qos=rng.choice(QOS), state=rng.choice(STATES))

    def save_one():
        ids = some()
        if ids:
            row = Job.objects.get(id=ids[0])
            row.state, row.account = rng.choice(STATES), rng.choice(ACCOUNTS)
            row.save(update_fields=["state", "account"])

    def other_field_update():
        Job.objects.filter(id__in=some()).update(priority=rng.randrange(100))

    def raw_update():
        q = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {q('cluster_job')} SET {q('state')} = %s, {q('user')} = %s WHERE id = %s",  # noqa: S608
                [rng.choice(STATES).value, rng.choice(USERS), rng.choice(some() or [0])],
            )

    def delete():
        Job.objects.filter(id__in=some()).delete()

    def rolled_back():
        try:
            with transaction.atomic():
                bulk_create()
                state_update()
                delete()
                raise _Undo
        except _Undo:
            pass

    def compact():
        submit_counts.compact(at_least=rng.choice((0, 3, 50)))

    return [
        bulk_create, create_one, state_update, key_update, key_and_state_update, save_one,
        other_field_update, raw_update, delete, rolled_back, compact,
    ]  # fmt: skip
