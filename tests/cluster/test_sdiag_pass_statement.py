"""sdiag's pass counters written by one hand-built UPDATE (#18: a pass's fixed cost).

``record_pass`` compiled an ORM UPDATE of thirty CASE expressions every pass (~20-30 ms
of Python on a statement that runs in well under a millisecond).  Checked here: it
compiles no ORM query now, and on varied sequences of passes (main and backfill, passes
on a later day, an earlier "now", a reset between) the row ends exactly as the ORM
statement it replaces left it (that statement is kept below as the reference).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import BigIntegerField, Case, DateTimeField, F, Field, Q, Value, When
from django.db.models.functions import Greatest
from django.db.models.sql import compiler

from cluster.models import SchedulerStats
from cluster.services import diagnostics
from cluster.services.diagnostics import _BACKFILL, _MAIN, _ROW, PassFigures, midnight

pytestmark = pytest.mark.django_db


def reference_record_pass(figures: PassFigures, *, backfill: bool, now: datetime) -> None:
    """The ORM statement record_pass ran before (main at 9df9334)."""
    new_day = Q(since__lt=midnight(now))

    def fresh_or(value: object, default: object, output: Field | None = None) -> Case:
        return Case(
            When(new_day, then=Value(value)), default=default, output_field=output or BigIntegerField()
        )

    us, depth, tried, backfilled = figures.elapsed_us, figures.depth, figures.tried, figures.backfilled
    if backfill:
        own = {
            "bf_cycles": fresh_or(1, F("bf_cycles") + 1),
            "bf_last_us": Value(us),
            "bf_max_us": fresh_or(us, Greatest(F("bf_max_us"), Value(us), output_field=BigIntegerField())),
            "bf_sum_us": fresh_or(us, F("bf_sum_us") + us),
            "bf_last_depth": Value(depth),
            "bf_depth_sum": fresh_or(depth, F("bf_depth_sum") + depth),
            "bf_last_depth_try": Value(tried),
            "bf_depth_try_sum": fresh_or(tried, F("bf_depth_try_sum") + tried),
            "bf_queue_len": Value(depth),
            "bf_queue_len_sum": fresh_or(depth, F("bf_queue_len_sum") + depth),
            "bf_backfilled_jobs": fresh_or(backfilled, F("bf_backfilled_jobs") + backfilled),
            "bf_last_when": Value(now),
        }
        others = _MAIN
    else:
        own = {
            "main_cycles": fresh_or(1, F("main_cycles") + 1),
            "main_last_us": Value(us),
            "main_max_us": fresh_or(
                us, Greatest(F("main_max_us"), Value(us), output_field=BigIntegerField())
            ),
            "main_sum_us": fresh_or(us, F("main_sum_us") + us),
            "main_depth_sum": fresh_or(depth, F("main_depth_sum") + depth),
            "main_last_when": Value(now),  # a pending job's LastSchedEval, whatever the day
        }
        others = _BACKFILL
        own["bf_last_when"] = fresh_or(None, F("bf_last_when"), DateTimeField())
    fields = {
        **own,
        **{name: fresh_or(0, F(name)) for name in others},
        "since": fresh_or(midnight(now), F("since"), DateTimeField()),
    }
    if not SchedulerStats.objects.filter(pk=_ROW).update(**fields):
        SchedulerStats.objects.get_or_create(pk=_ROW, defaults={"since": midnight(now)})
        SchedulerStats.objects.filter(pk=_ROW).update(**fields)


def _row() -> dict[str, object]:
    values = SchedulerStats.objects.filter(pk=_ROW).values().first()
    assert values is not None
    return values


def test_a_pass_is_counted_without_compiling_an_orm_query(monkeypatch):
    diagnostics.record_pass(PassFigures(elapsed_us=5, depth=1), backfill=False)  # the row exists
    compiled = []
    original = compiler.SQLUpdateCompiler.as_sql

    def counting(self, *args, **kwargs):
        compiled.append(self.query.model)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(compiler.SQLUpdateCompiler, "as_sql", counting)
    diagnostics.record_pass(PassFigures(elapsed_us=7, depth=2, backfilled=1, tried=2), backfill=True)
    diagnostics.record_pass(PassFigures(elapsed_us=9, depth=3), backfill=False)
    assert compiled == []
    row = _row()
    assert (row["main_cycles"], row["main_max_us"], row["bf_cycles"], row["bf_backfilled_jobs"]) == (
        2,
        9,
        1,
        1,
    )


def test_the_counters_end_as_the_orm_statement_left_them():
    rng = random.Random(18)
    for _ in range(40):
        start = datetime(2026, 3, 1, rng.randrange(24), rng.randrange(60), tzinfo=UTC)
        steps = []
        t = start
        for _ in range(rng.randint(1, 12)):
            t += timedelta(minutes=rng.choice((0, 1, 30, 600, 1500)))
            figures = PassFigures(
                elapsed_us=rng.randrange(1, 10**7),
                depth=rng.randrange(0, 5000),
                backfilled=rng.randrange(0, 50),
                tried=rng.randrange(0, 500),
            )
            steps.append((figures, rng.random() < 0.4, t, rng.random() < 0.1))
        ends = []
        for record in (reference_record_pass, diagnostics.record_pass):
            SchedulerStats.objects.all().delete()
            for figures, backfill, now, reset in steps:
                if reset:
                    diagnostics.reset(now=now)
                record(figures, backfill=backfill, now=now)
            ends.append(_row())
        assert ends[0] == ends[1], steps
