"""A pass that starts many jobs writes what it wrote before its per-start work was cut.

``rows`` prepares each distinct value of a statement once (``_Prepared``) and job
credentials are upserted without model instances (``rows.upsert_values``): compared here
with the ORM's writes and with the pass as it ran before (its old pieces kept in this
file), on random values and random queues (fixed seeds).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction

from cluster import publish
from cluster.core.hostlists import fold
from cluster.core.states import JobState
from cluster.models import Event, Job, JobCredential
from cluster.services import agents, job_credentials, rows
from cluster.services.api_tokens import digest
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass

NODES = [f"node{i:02d}" for i in range(1, 33)]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _raw(table_fields, ids):
    """The stored columns of these jobs, as the database holds them."""
    cols = ", ".join(connection.ops.quote_name(Job._meta.get_field(f).column) for f in table_fields)
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, {cols} FROM cluster_job WHERE id IN ({marks}) ORDER BY id", ids)  # noqa: S608
        return [row[1:] for row in cursor.fetchall()]


def _tricky_values(rng, count):
    """Values that look alike to a careless memo: 1, True and "1"; {} and []; equal
    instants in two time zones; one datetime object shared; equal dicts, shared or not."""
    shared_time = NOW + timedelta(minutes=5)
    shared_alloc = {"node01": [1, 100]}
    east = timezone(timedelta(hours=2))
    out = []
    for _ in range(count):
        out.append(
            (
                rng.choice([1, True, "1", "True", 0, False, "", "0"]),  # reason: a CharField
                rng.choice([{}, [], {"node01": [1, 100]}, shared_alloc, [1], {"a": []}]),  # alloc: JSON
                rng.choice([NOW, shared_time, NOW.astimezone(east), NOW + timedelta(seconds=1), None]),
                rng.choice([0, 1, True, False, 7]),  # priority
                rng.choice([JobState.RUNNING, "RUNNING", JobState.PENDING, "PENDING"]),
            )
        )
    return out


FIELDS = ("reason", "alloc", "start_time", "priority", "state")


@pytest.mark.django_db
def test_update_values_writes_what_the_orm_writes_row_by_row():
    rng = random.Random(18)
    base = [Job(id=i, user="u", partition="batch", submit_time=NOW) for i in range(1, 401)]
    Job.objects.bulk_create(base)
    values = _tricky_values(rng, 200)
    rows.update_values(Job, FIELDS, [(i + 1, *v) for i, v in enumerate(values)])
    for i, v in enumerate(values):
        Job.objects.filter(pk=201 + i).update(**dict(zip(FIELDS, v, strict=True)))
    assert _raw(FIELDS, list(range(1, 201))) == _raw(FIELDS, list(range(201, 401)))


@pytest.mark.django_db
def test_insert_values_writes_what_the_orm_writes():
    rng = random.Random(19)
    values = _tricky_values(rng, 200)
    given = [
        {"user": "u", "partition": "batch", "submit_time": NOW, **dict(zip(FIELDS, v, strict=True))}
        for v in values
    ]
    rows.insert_values(Job, [{"id": 1 + i, **g} for i, g in enumerate(given)])
    Job.objects.bulk_create([Job(id=201 + i, **g) for i, g in enumerate(given)])
    every = [f.name for f in Job._meta.concrete_fields if f.name != "id"]
    assert _raw(every, list(range(1, 201))) == _raw(every, list(range(201, 401)))


def old_mint_many(jobs):
    """job_credentials.mint_many as it was: the ORM's bulk_create with update_conflicts."""
    import secrets

    texts = {job.id: f"{job.id}.{secrets.token_urlsafe(32)}" for job in jobs}
    runs = {job.id: job.restart_count for job in jobs}
    if texts:
        JobCredential.objects.bulk_create(
            [JobCredential(job_id=i, digest=digest(t), run=runs[i]) for i, t in texts.items()],
            update_conflicts=True,
            unique_fields=["job"],
            update_fields=["digest", "run"],
        )
    return texts


class _OldPrepared:
    """rows._Prepared without its memo: every value prepared, as before."""

    def __init__(self, field, conn):
        self.field, self.conn = field, conn

    def __call__(self, value):
        return self.field.get_db_prep_save(value, self.conn)


def _submit_random(rng, users):
    for _ in range(rng.randint(20, 60)):
        spec = {"wrap": "true", "work_dir": "/tmp", "time": rng.choice([5, 30, 60])}
        shape = rng.random()
        if shape < 0.3:
            spec["array"] = f"1-{rng.randint(2, 12)}"
        elif shape < 0.5:
            spec["nodes"] = rng.randint(1, 3)
            spec["ntasks"] = spec["nodes"] * rng.randint(1, 4)
        else:
            spec["cpus_per_task"] = rng.randint(1, 4)
        if rng.random() < 0.3:
            spec["mail_type"] = rng.choice(["BEGIN", "ALL", "BEGIN,ARRAY_TASKS"])
        job_submit(user=users[rng.choice(["alice", "bob"])], spec=spec, now=NOW)


def _one_pass(monkeypatch):
    """Rows, events, credentials and launches of one pass, all rolled back after."""
    launched = []
    monkeypatch.setattr(publish, "to_agents", launched.extend)
    with transaction.atomic():
        summary = schedule_pass(now=NOW + timedelta(seconds=30))
        jobs = list(Job.objects.order_by("id").values())
        events = list(
            Event.objects.order_by("id").values("time", "kind", "job_id", "old_state", "new_state", "node")
        )
        creds = {c.job_id: (c.run, c.digest) for c in JobCredential.objects.all()}
        transaction.set_rollback(True)
    monkeypatch.undo()
    messages = []
    for node, payload in launched:
        job = payload.get("job", {})
        # A credential is random: compared with its stored digest, not with the old run's.
        messages.append((node, {**payload, "job": {k: v for k, v in job.items() if k != "credential"}},
                         job.get("credential")))  # fmt: skip
    return summary, jobs, events, creds, messages


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_pass_of_many_starts_writes_as_before(demo, users, monkeypatch, seed):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )
    _submit_random(random.Random(seed), users)
    new = _one_pass(monkeypatch)
    monkeypatch.setattr(rows, "_Prepared", _OldPrepared)
    monkeypatch.setattr(job_credentials, "mint_many", old_mint_many)
    old = _one_pass(monkeypatch)
    monkeypatch.undo()
    summary, jobs, events, creds, messages = new
    assert summary.written > 0 and messages
    assert (summary, jobs, events) == old[:3]
    assert {k: run for k, (run, _) in creds.items()} == {k: run for k, (run, _) in old[3].items()}
    assert [m[:2] for m in messages] == [m[:2] for m in old[4]]
    for _node, payload, text in messages:
        job_id = payload["job"]["job_id"]
        assert text is not None and digest(text) == creds[job_id][1]
    for job in jobs:
        if job["state"] != "PENDING":
            assert job["node_list"] == fold(list(job["alloc"]))


@pytest.mark.django_db
def test_rows_inserted_one_by_one_are_what_the_orm_writes():
    """A one-row statement (a submission's job and event) prepares its plain scalars
    through the connection's kept values (``rows._saved``), shared across statements: two
    rounds of the same tricky values, each row a statement of its own, store what the
    ORM stores."""
    rng = random.Random(20)
    values = _tricky_values(rng, 150)
    given = [
        {"user": "u", "partition": "batch", "submit_time": NOW, **dict(zip(FIELDS, v, strict=True))}
        for v in values
    ]
    for round_start in (1, 151):
        for i, g in enumerate(given):
            rows.insert_values(Job, [{"id": round_start + i, **g}])
    Job.objects.bulk_create([Job(id=301 + i, **g) for i, g in enumerate(given)])
    every = [f.name for f in Job._meta.concrete_fields if f.name != "id"]
    orm = _raw(every, list(range(301, 451)))
    assert _raw(every, list(range(1, 151))) == orm
    assert _raw(every, list(range(151, 301))) == orm


# Texts alike to numbers, booleans, JSON and a time; numbers alike to booleans.
TEXTS = ["", "x", "1", "True", "RUNNING", "2026-01-01 00:00:00", "{}"]
SCALARS = [*TEXTS, 0, 1, -1, 7, 2**40, True, False, None]


def _prepared_or_error(prepare, field, value):
    try:
        prepared = prepare(field, value)
    except Exception as exc:  # the ORM's own refusal is compared
        return ("error", type(exc))
    return (type(prepared), prepared)


@pytest.mark.django_db
@pytest.mark.filterwarnings("ignore:DateTimeField .* received a naive datetime")
def test_kept_scalars_prepare_as_each_field_does():
    """Every field of every model, random plain scalars in random order, each asked
    several times (later asks answered from what was kept): what ``_saved`` returns is
    what the field's ``get_db_prep_save`` returns, of the same type, or the same refusal."""
    from django.apps import apps

    conn = connections[DEFAULT_DB_ALIAS]  # the wrapper the services use, not the proxy
    rng = random.Random(21)
    fields = [f for model in apps.get_models() for f in model._meta.concrete_fields]
    asks = [(rng.choice(fields), rng.choice(SCALARS)) for _ in range(3000)]
    for field, value in asks + rng.sample(asks, len(asks)):
        kept = _prepared_or_error(lambda f, v: rows._saved(f, v, conn), field, value)
        own = _prepared_or_error(lambda f, v: f.get_db_prep_save(v, conn), field, value)
        assert kept == own, (field, value)
