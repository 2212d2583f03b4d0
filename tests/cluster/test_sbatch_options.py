"""sbatch --comment, --open-mode, --time-min and --signal in the controller (#16 point 6):
validated with sbatch's messages, stored, shown by the API and carried to the agent."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.state import launch_payload


def test_the_options_are_stored_shown_and_launched(demo, users, api):
    spec = {
        "wrap": "true",
        "time": "10",
        "comment": "run 3 of the sweep",
        "open_mode": "A",
        "time_min": "0:30",
        "signal": "B:USR1@120",
    }
    answer = api("alice").post("/api/jobs/", spec, format="json")
    assert answer.status_code == 201, answer.content
    job_id = answer.json()["job_id"]
    shown = api("alice").get(f"/api/jobs/{job_id}/").json()
    assert (shown["comment"], shown["open_mode"], shown["time_min"], shown["signal"]) == (
        "run 3 of the sweep",
        "append",
        1,  # seconds round up to a minute, as --time does
        "B:10@120",
    )
    wire = launch_payload(Job.objects.get(pk=job_id))["job"]
    assert (wire["open_mode"], wire["signal"], wire["time_limit"]) == ("append", "B:10@120", 10)


def test_a_job_without_them_launches_as_before(demo, users, api):
    answer = api("alice").post("/api/jobs/", {"wrap": "true"}, format="json")
    job = Job.objects.get(pk=answer.json()["job_id"])
    assert (job.comment, job.open_mode, job.time_min, job.signal) == ("", "", None, "")
    wire = launch_payload(job)["job"]
    assert "open_mode" not in wire and "signal" not in wire


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("open_mode", "x", "Invalid --open-mode argument: x. Ignored"),
        ("signal", "USR9@10", "Invalid --signal specification: USR9@10"),
        ("signal", "X:USR1", "Invalid --signal specification: X:USR1"),
        ("signal", "USR1@70000", "Invalid --signal specification: USR1@70000"),
        ("time_min", "soon", "Invalid time-min specification: soon"),
        ("time_min", "20", "Invalid time-min specification (exceeds job's time or other limits)"),
        ("comment", "a\nb", "Invalid --comment specification: a\\nb has a control character"),
    ],
)
@pytest.mark.usefixtures("demo", "users")
def test_bad_values_are_refused_naming_the_option(api, field, value, error):
    before = Job.objects.count()
    answer = api("alice").post("/api/jobs/", {"wrap": "true", "time": "10", field: value}, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"] == error
    assert Job.objects.count() == before
