"""A request as Slurm's job_desc and back (jobsubmit.core.desc, #17 point 7)."""

from __future__ import annotations

import pytest

from jobsubmit.core import desc
from luaplug.codes import INFINITE, NO_VAL, NO_VAL16

WHO = desc.Identity("alice", 1000, 100)


def test_a_request_reads_as_job_desc_with_slurms_unset_values():
    d = desc.job_desc({"script": "#!/bin/sh\n", "gres": "gpu:2,gpu:tesla:1", "constraint": "a&b"}, WHO)
    assert d == {
        "script": "#!/bin/sh\n",
        "features": "a&b",
        "tres_per_node": "gres/gpu:2,gres/gpu:tesla:1",
        "time_limit": NO_VAL,
        "min_nodes": NO_VAL,
        "max_nodes": NO_VAL,
        "num_tasks": NO_VAL,
        "cpus_per_task": NO_VAL16,
        "ntasks_per_node": NO_VAL16,
        "user_name": "alice",
        "user_id": 1000,
        "group_id": 100,
    }
    d = desc.job_desc({"time": "1-00:00:00", "nodes": "2-4", "ntasks": "8", "cpus_per_task": 3}, WHO)
    assert (d["time_limit"], d["min_nodes"], d["max_nodes"], d["num_tasks"], d["cpus_per_task"]) == (
        1440, 2, 4, 8, 3,
    )  # fmt: skip
    assert desc.job_desc({"time": "UNLIMITED"}, WHO)["time_limit"] == INFINITE
    # Values that are not text or numbers are not shown to the script (refused later).
    assert "name" not in desc.job_desc({"name": {"x": 1}}, WHO)


def test_only_what_the_script_changed_goes_back_in_the_requests_form():
    spec = {"script": "s", "nodes": "2", "time": "90:00", "gres": "gpu:1", "name": "n"}
    before = desc.job_desc(spec, WHO)
    after = dict(before, max_nodes=4, time_limit=30, tres_per_node="gres/gpu:tesla:1,gpu:k80:2", name="")
    after["account"] = "acct"
    after["user_id"] = 0  # read only
    after["tres_per_task"] = "gres/gpu:1"  # --gpus-per-task: not in fsched
    out, ignored = desc.changed_spec(spec, before, after)
    assert out == {
        "script": "s",
        "nodes": "2-4",
        "time": "30",
        "gres": "gpu:tesla:1,gpu:k80:2",
        "account": "acct",
    }
    assert ignored == ["tres_per_task", "user_id"]
    out, _ = desc.changed_spec({"time": "5"}, {"time_limit": 5}, {"time_limit": INFINITE})
    assert out == {"time": "UNLIMITED"}


@pytest.mark.parametrize(
    ("after", "message"),
    [
        ({"time_limit": "soon"}, "time_limit must be a non-negative whole number"),
        ({"min_nodes": -1}, "min_nodes must be a non-negative whole number"),
        ({"tres_per_node": "license/x:1"}, "only gres/ TRES can be requested per node"),
        ({"partition": {}}, "partition must be a string"),
    ],
)
def test_a_value_that_cannot_go_back_is_an_error(after, message):
    with pytest.raises(desc.DescError, match=message):
        desc.changed_spec({}, {}, after)


def test_modify_shows_only_the_fields_being_updated_and_takes_changes_back():
    before = desc.modify_desc({"time_limit": "2:00:00", "name": "x"})
    assert before == {"time_limit": 120, "name": "x", "nice": NO_VAL}
    out, ignored = desc.changed_modify(
        {"time_limit": "2:00:00", "name": "x"}, before, dict(before, time_limit=60, name=None, comment="c")
    )
    assert (out, ignored) == ({"time_limit": "60"}, ["comment"])
