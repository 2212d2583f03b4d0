"""power.core.resume_file: the SLURM_RESUME_FILE document of Slurm's power_save.html."""

from __future__ import annotations

import json

import pytest

from power.core.policy import PowerJob
from power.core.resume_file import resume_document, resume_file_text

# The example of Slurm's power_save.html ("ResumeProgram"), as JSON.
SPEC_EXAMPLE = {
    "all_nodes_resume": "cloud[1-3,7-8]",
    "jobs": [
        {
            "exclusive": "NO",
            "extra": "An arbitrary string from --extra",
            "features": "c1,c2",
            "job_id": 140814,
            "layout": "tpu7x=2x2x4",
            "nodes_alloc": "cloud[1-4]",
            "nodes_resume": "cloud[1-3]",
            "oversubscribe": "OK",
            "partition": "cloud",
            "reservation": "resv_1234",
        },
        {
            "exclusive": "NO",
            "extra": None,
            "features": "c1,c2",
            "job_id": 140815,
            "layout": None,
            "nodes_alloc": "cloud[1-2]",
            "nodes_resume": "cloud[1-2]",
            "oversubscribe": "OK",
            "partition": "cloud",
            "reservation": None,
        },
        {
            "exclusive": "NODE",
            "extra": None,
            "features": None,
            "job_id": 140816,
            "layout": None,
            "nodes_alloc": "cloud[7-8]",
            "nodes_resume": "cloud[7-8]",
            "oversubscribe": "NO",
            "partition": "cloud_exclusive",
            "reservation": None,
        },
    ],
}


def spec_jobs() -> list[PowerJob]:
    return [
        PowerJob(
            140816, ("cloud7", "cloud8"), partition="cloud_exclusive", exclusive="NODE", oversubscribe="NO"
        ),
        PowerJob(
            140814,
            ("cloud1", "cloud2", "cloud3", "cloud4"),  # cloud4 is already up
            partition="cloud",
            reservation="resv_1234",
            features="c1,c2",
            extra="An arbitrary string from --extra",
            layout="tpu7x=2x2x4",
        ),
        PowerJob(140815, ("cloud1", "cloud2"), partition="cloud", features="c1,c2"),
        PowerJob(140900, ("cloud4",), partition="cloud"),  # nothing of it resumes: not listed
    ]


def test_spec_example_document() -> None:
    resuming = ["cloud7", "cloud1", "cloud2", "cloud3", "cloud8"]
    assert resume_document(resuming, spec_jobs()) == SPEC_EXAMPLE
    text = resume_file_text(resuming, spec_jobs())
    assert json.loads(text) == SPEC_EXAMPLE
    assert text.index('"all_nodes_resume"') < text.index('"jobs"')  # keys sorted, as in the example


def test_no_jobs() -> None:
    assert resume_document(["n2", "n1"], []) == {"all_nodes_resume": "n[1-2]", "jobs": []}


@pytest.mark.parametrize(("field", "value"), [("exclusive", "SOMETIMES"), ("oversubscribe", "FORCE")])
def test_values_squeue_does_not_print_are_refused(field: str, value: str) -> None:
    job = PowerJob(1, ("n1",), **{field: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=field):
        resume_document(["n1"], [job])
