"""The scheduler pass's kept snapshot (cluster.services.pass_snapshot) against a fresh read.

An oracle: random sequences of the real services (submit, passes, completions, scancel,
requeue, drain and resume, suspend and resume, scontrol update of jobs and nodes, a
reconfigure with changed weights and partitions, a dynamic node created and deleted),
and after every step the kept nodes, partitions and holding jobs equal what a pass would
read from the database now.  Without the kept snapshot's change tracking (a view kept and
never re-read, a row re-read but not its index, a rollback not forgotten) a step leaves
them different.
"""

from __future__ import annotations

import contextlib
import random
import shutil

import pytest
from django.db import transaction
from django.utils import timezone

from cluster.models import Job, Node
from cluster.services import agents, pass_snapshot, statement_effects
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import (
    job_cancel,
    job_hold,
    job_release,
    job_requeue,
    job_resume,
    job_submit,
    job_suspend,
    job_update,
)
from cluster.services.nodes import node_update
from cluster.services.scheduling import build_snapshot, schedule_pass
from tests.cluster.snapshot_checks import CHANGES_SEEN, assert_kept_equals_fresh, register
from tests.conftest import DEMO_CONF

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]


def _register():
    register(NODES)


_assert_same = assert_kept_equals_fresh


def _holding(rng):
    ids = list(Job.objects.filter(state__in=["RUNNING", "SUSPENDED"]).values_list("id", flat=True))
    return rng.choice(ids) if ids else None


def _steps(rng, users, conf):
    admin, alice = users["admin"], users["alice"]

    def submit():
        spec = {
            "wrap": "true",
            "work_dir": "/tmp",
            "partition": rng.choice(["debug", "batch", "long"]),
            "nodes": rng.choice([1, 1, 2]),
            "ntasks_per_node": rng.choice([1, 2, 4]),
            "time": rng.choice(["5", "20"]),
        }
        job_submit(user=alice, spec=spec)

    def complete():
        job_id = _holding(rng)
        if job_id is not None:
            job = Job.objects.get(pk=job_id)
            agents.job_completed(
                completion={
                    "job_id": job.id,
                    "node": job.batch_host,
                    "exit_code": 0,
                    "signal": 0,
                    "end_time": timezone.now().timestamp(),
                }
            )

    def cancel():
        job_id = _holding(rng)
        if job_id is not None:
            job_cancel(actor=admin, job_id=job_id)

    def requeue():
        job_id = _holding(rng)
        if job_id is not None:
            job_requeue(actor=admin, job_id=job_id)

    def suspend():
        job_id = _holding(rng)
        if job_id is not None:
            job = Job.objects.get(pk=job_id)
            (job_resume if job.state == "SUSPENDED" else job_suspend)(actor=admin, job_id=job_id)

    def update_job():
        job_id = _holding(rng)
        if job_id is not None:
            job_update(actor=admin, job_id=job_id, changes={"time_limit": rng.choice([15, 25, 60])})

    def queued_job():
        ids = list(Job.objects.filter(state="PENDING").values_list("id", flat=True))
        return rng.choice(ids) if ids else None

    def hold_or_release():
        job_id = queued_job()
        if job_id is not None:
            held = Job.objects.get(pk=job_id).hold
            (job_release if held else job_hold)(actor=admin, job_id=job_id)

    def update_queued():
        job_id = queued_job()
        if job_id is not None:
            change = rng.choice([{"time_limit": rng.choice([5, 15])}, {"nice": rng.choice([0, 10])}])
            job_update(actor=admin, job_id=job_id, changes=change)

    def cancel_queued():
        job_id = queued_job()
        if job_id is not None:
            job_cancel(actor=admin, job_id=job_id)

    def submit_after():
        # A dependency, which the pass rewrites as its terms are fulfilled.
        job_id = _holding(rng) or queued_job()
        if job_id is not None:
            spec = {"wrap": "true", "work_dir": "/tmp", "partition": "debug"}
            job_submit(user=alice, spec={**spec, "dependency": f"afterany:{job_id}"})

    def drain():
        node_update(actor=admin, nodes=rng.choice(NODES), state="DRAIN", reason="oracle")

    def resume_node():
        node_update(actor=admin, nodes=rng.choice(NODES), state="RESUME")

    def update_node():
        node_update(actor=admin, nodes=rng.choice(NODES), weight=rng.choice([1, 5, 9]), features="rack9,fast")

    def reconfigure():
        text = (DEMO_CONF / "partitions.conf").read_text()
        if rng.random() < 0.5:
            text = text.replace("MaxTime=30 DefaultTime=10", f"MaxTime={rng.choice([30, 40])} DefaultTime=10")
            text = text.replace("Nodes=node[01-08]", rng.choice(["Nodes=node[01-08]", "Nodes=node[01-10]"]))
        (conf / "partitions.conf").write_text(text)
        config_load(path=conf / "slurm.conf")

    def rolled_back():
        # A write undone: what a pass read inside the transaction must not be kept.
        with transaction.atomic():
            Node.objects.filter(name=rng.choice(NODES)).update(weight=77)
            Job.objects.filter(state="RUNNING").update(time_limit=999)
            _assert_same()
            transaction.set_rollback(True)

    def raw_update():
        # A write no service makes by key: the whole table is read again.
        Job.objects.filter(state="RUNNING", partition="batch").update(time_limit=rng.choice([30, 45]))

    return [
        (submit, 6),
        (lambda: schedule_pass(backfill=rng.random() < 0.5), 5),
        (complete, 3),
        (cancel, 1),
        (requeue, 1),
        (suspend, 1),
        (update_job, 1),
        (drain, 1),
        (resume_node, 1),
        (update_node, 1),
        (reconfigure, 1),
        (rolled_back, 1),
        (raw_update, 1),
        (hold_or_release, 1),
        (update_queued, 1),
        (cancel_queued, 1),
        (submit_after, 1),
        (lambda: schedule_pass(backfill=False, queue_depth=2), 2),
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_snapshot_equals_a_fresh_read_after_every_step(demo, users, settings, tmp_path, seed):
    conf = tmp_path / "conf"
    shutil.copytree(DEMO_CONF, conf)
    settings.CONF_DIR = conf
    rng = random.Random(seed)
    said = CHANGES_SEEN[0]
    with pass_snapshot.keep():
        _assert_same()
        _register()
        _assert_same()
        steps = _steps(rng, users, conf)
        funcs, weights = zip(*steps, strict=True)
        for _ in range(120):
            step = rng.choices(funcs, weights)[0]
            with contextlib.suppress(ServiceError):  # a refusal (a job already ending): still compared
                step()
            _assert_same()
        assert Job.objects.filter(state="RUNNING").exists()  # the sequence did run jobs
        assert CHANGES_SEEN[0] > said  # and handed over what changed in the holding jobs


def test_a_pass_builds_the_same_snapshot_kept_or_not(demo, users):
    _register()
    for _ in range(6):
        job_submit(user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "partition": "batch"})
    now = timezone.now()
    with pass_snapshot.keep():
        schedule_pass()
        job_submit(user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "partition": "batch"})
        kept, kept_names = build_snapshot(now)
    fresh, names = build_snapshot(now)
    assert kept == fresh and kept_names == names


@pytest.mark.parametrize(
    ("sql", "params", "many", "want"),
    [
        ('UPDATE "cluster_job" SET "state" = %s WHERE "cluster_job"."id" = %s', ["RUNNING", 7], False, {7}),
        (
            'UPDATE "cluster_job" SET "alloc" = %s WHERE "id" = %s AND "state" = %s',
            [["{}", 3, "R"], ["{}", 4, "R"]],
            True,
            {3, 4},
        ),
        ('UPDATE "cluster_job" SET "state" = %s WHERE "id" IN (%s, %s)', ["X", 4, 5], False, {4, 5}),
        ('UPDATE "cluster_job" SET "priority" = %s WHERE "id" = %s', [1, 9], False, set()),
        ('UPDATE "cluster_job" SET "state" = %s WHERE "id" = %s OR "user" = %s', ["X", 1, "a"], False, None),
        ('UPDATE "cluster_job" SET "state" = %s WHERE "partition" = %s', ["X", "a"], False, None),
        ('DELETE FROM "cluster_job" WHERE "cluster_job"."id" IN (%s)', [8], False, {8}),
        ('DELETE FROM "cluster_job"', None, False, None),
        (
            'INSERT INTO "cluster_job" ("id", "state") VALUES (%s, %s), (%s, %s)',
            [1, "P", 2, "P"],
            False,
            {1, 2},
        ),
        ('INSERT INTO "cluster_job" ("state") SELECT "state" FROM "cluster_job"', [], False, None),
        ('UPDATE "cluster_jobevent" SET "state" = %s WHERE "id" = %s', ["X", 1], False, set()),
        # Written by hand, unquoted: still seen (the whole table, as its WHERE is not parsed).
        ("UPDATE cluster_job SET state = %s WHERE id = %s", ["X", 1], False, None),
        ("UPDATE main.cluster_job SET priority = %s", [1], False, set()),
        ("DELETE FROM cluster_job", None, False, None),
    ],
)
def test_a_statement_names_the_job_rows_it_writes(sql, params, many, want):
    """The rows a job table write re-reads: its ids, none (no column a pass reads), or all (None)."""
    changes = pass_snapshot._Changes()
    changes.nodes, changes.jobs, changes.partitions = set(), set(), False
    effect = statement_effects.effect(sql)
    saved = pass_snapshot._changes
    pass_snapshot._changes = changes
    try:
        pass_snapshot._record(effect, params, many)
    finally:
        pass_snapshot._changes = saved
    assert changes.jobs == want
