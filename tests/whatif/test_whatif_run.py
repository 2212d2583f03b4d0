"""A what-if run for real: both configurations simulated by the simulator's own processes
on one workload, their reports stored, and B's change seen in B's figures."""

from __future__ import annotations

import json

import pytest

from whatif import runner, services
from whatif.core.offer import offers
from whatif.models import WhatIf
from whatif.snapshot import texts

pytestmark = pytest.mark.django_db


def test_both_sides_run_and_b_s_layer_count_holds_jobs_back(demo, users, settings, tmp_path):
    settings.STATE_DIR = tmp_path / "state"
    keys = {o.label: o.key for o in offers(texts(services.base_files("current")))}
    # Four one-node jobs each asking for 6 of the flat resource at once: A's top layer (24)
    # holds all four, B's (6) one at a time.
    jobs = [
        {"submit": 0, "user": "alice", "partition": "batch", "run_time": 600, "licenses": "flat:6"}
        for _ in range(4)
    ]
    row = services.whatif_create(
        actor=users["admin"],
        base="current",
        posted={keys["flat / top"]: "6"},
        workload="upload",
        upload_name="four.json",
        upload=json.dumps({"jobs": jobs}).encode(),
    )
    assert runner.run(row.pk) == WhatIf.DONE, WhatIf.objects.get(pk=row.pk).error
    row.refresh_from_db()
    assert row.report_a["summary"]["jobs"] == row.report_b["summary"]["jobs"] == 4
    assert row.report_a["summary"]["wait"]["max"] < 60
    assert row.report_b["summary"]["wait"]["max"] >= 3 * 600
    assert runner.run(row.pk) == "taken"  # never twice
