"""Job dependencies through the services (#16 point 1): sbatch's --dependency checked and
stored in Slurm's printed form, the pass's reasons Dependency and DependencyNeverSatisfied,
DependencyParameters=kill_invalid_depend, ``scontrol update Dependency=``, and the pass's
one read of the jobs the dependencies name."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cluster.models import Job
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_cancel, job_submit, job_update
from cluster.services.scheduling import build_snapshot, schedule_pass

NODES = [f"node{i:02d}" for i in range(1, 33)]


def register():
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )


def submit(user, **spec) -> int:
    return job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]


def finish(job_id: int, exit_code: int = 0) -> None:
    job = Job.objects.get(pk=job_id)
    agents.job_completed(
        completion={
            "job_id": job.id,
            "node": job.batch_host,
            "exit_code": exit_code,
            "signal": 0,
            "end_time": timezone.now().timestamp(),
        }
    )


def row(job_id: int) -> tuple[str, str, str]:
    job = Job.objects.get(pk=job_id)
    return job.state, job.reason, job.dependency


def test_a_pipeline_of_afterok_runs_in_order(demo, users):
    register()
    alice = users["alice"]
    first = submit(alice)
    second = submit(alice, dependency=f"afterok:{first}")
    third = submit(alice, dependency=f"afterok:{second}")
    assert row(second) == ("PENDING", "Dependency", f"afterok:{first}(unfulfilled)")
    schedule_pass()
    assert row(first)[0] == "RUNNING"
    assert row(second) == ("PENDING", "Dependency", f"afterok:{first}(unfulfilled)")
    assert row(third) == ("PENDING", "Dependency", f"afterok:{second}(unfulfilled)")
    finish(first)
    schedule_pass()
    # Fulfilled, the dependency is gone (Dependency=(null)) and the job runs.
    assert row(second) == ("RUNNING", "None", "")
    assert row(third)[:2] == ("PENDING", "Dependency")
    finish(second)
    schedule_pass()
    assert row(third) == ("RUNNING", "None", "")


def test_afternotok_on_a_job_that_succeeded_is_never_satisfied(demo, users):
    register()
    ok = submit(users["alice"])
    waits = submit(users["alice"], dependency=f"afternotok:{ok}")
    schedule_pass()
    finish(ok)
    schedule_pass()
    assert row(waits) == ("PENDING", "DependencyNeverSatisfied", f"afternotok:{ok}(failed)")
    schedule_pass()  # it stays so, pass after pass
    assert row(waits) == ("PENDING", "DependencyNeverSatisfied", f"afternotok:{ok}(failed)")


def test_kill_invalid_depend_cancels_it(demo, users, conf_dir, settings):
    settings.CONF_DIR = conf_dir
    path = conf_dir / "slurm.conf"
    path.write_text(path.read_text() + "DependencyParameters=kill_invalid_depend\n")
    config_load(path=path)
    register()
    ok = submit(users["alice"])
    waits = submit(users["alice"], dependency=f"afternotok:{ok}")
    schedule_pass()
    finish(ok)
    schedule_pass()
    job = Job.objects.get(pk=waits)
    assert (job.state, job.reason) == ("CANCELLED", "DependencyNeverSatisfied")
    assert job.end_time is not None


def test_a_bad_dependency_parameter_stops_the_configuration(conf_dir, db, settings):
    settings.CONF_DIR = conf_dir
    path = conf_dir / "slurm.conf"
    path.write_text(path.read_text() + "DependencyParameters=kill_invalid\n")
    with pytest.raises(ServiceError, match=r"slurm.conf:\d+: DependencyParameters=kill_invalid: invalid"):
        config_load(path=path)


def test_refused_as_slurm_refuses(demo, users, api):
    alice = users["alice"]
    # afterok / afternotok on a job that never existed: Slurm could never tell how it ended.
    for spec in ("afterok:999999", "afternotok:999999", "afterok:1,afterok:2?afterok:3", "after:x"):
        with pytest.raises(ServiceError, match=r"^Job dependency problem$"):
            submit(alice, dependency=spec)
    answer = api("alice").post("/api/jobs/", {"wrap": "true", "dependency": "afterok:999999"}, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"] == "Job dependency problem"
    assert Job.objects.count() == 0
    # after and afterany on a job that is gone are taken, and lifted by the pass.
    gone = submit(alice, dependency="afterany:999999")
    register()
    schedule_pass()
    assert row(gone) == ("RUNNING", "None", "")


def test_an_array_is_named_whole_by_its_id_and_its_tasks_one_by_one(demo, users, api):
    alice = users["alice"]
    array = job_submit(user=alice, spec={"wrap": "true", "work_dir": "/tmp", "array": "0-2"}).job_ids[0]
    whole = submit(alice, dependency=f"afterok:{array}")
    task = submit(alice, dependency=f"afterok:{array}_2")
    assert row(whole)[2] == f"afterok:{array}_*(unfulfilled)"
    assert row(task)[2] == f"afterok:{array}_2(unfulfilled)"
    assert api("alice").get(f"/api/jobs/{whole}/").json()["dependency"] == f"afterok:{array}_*(unfulfilled)"
    with pytest.raises(ServiceError, match="Job dependency problem"):
        submit(alice, dependency=f"afterok:{array}_7")  # no task 7
    corr = job_submit(
        user=alice,
        spec={"wrap": "true", "work_dir": "/tmp", "array": "0-2", "dependency": f"aftercorr:{array}"},
    ).job_ids
    register()
    schedule_pass()
    # Task 0 of the array ran first; finish it and its counterpart may go.
    finish(array)
    schedule_pass()
    states = [Job.objects.get(pk=i).state for i in corr]
    assert states == ["RUNNING", "PENDING", "PENDING"]
    assert row(whole)[:2] == ("PENDING", "Dependency")


def test_singleton_waits_for_the_earlier_job_of_the_same_name(demo, users):
    register()
    alice = users["alice"]
    first = submit(alice, name="sim", dependency="singleton")
    second = submit(alice, name="sim", dependency="singleton")
    other = submit(users["bob"], name="sim", dependency="singleton")
    schedule_pass()
    assert row(first)[0] == "RUNNING"
    assert row(second) == ("PENDING", "Dependency", "singleton(unfulfilled)")
    assert row(other)[0] == "RUNNING"
    finish(first)
    schedule_pass()
    assert row(second)[0] == "RUNNING"


def test_scontrol_update_sets_and_clears_it(demo, users):
    register()
    alice = users["alice"]
    blocker = submit(alice, begin="now+3600")
    job_id = submit(alice, begin="now+3600")
    job_update(actor=alice, job_id=job_id, changes={"dependency": f"afterany:{blocker}"})
    assert row(job_id) == ("PENDING", "Dependency", f"afterany:{blocker}(unfulfilled)")
    # On itself, in a circle, or on another user's job that does not exist: refused, unchanged.
    with pytest.raises(ServiceError, match=r"^Job dependency problem$"):
        job_update(actor=alice, job_id=job_id, changes={"dependency": f"afterok:{job_id}"})
    with pytest.raises(ServiceError, match=r"^Circular job dependency$"):
        job_update(actor=alice, job_id=blocker, changes={"dependency": f"afterany:{job_id}"})
    assert row(blocker)[2] == ""
    job_update(actor=alice, job_id=job_id, changes={"dependency": ""})
    assert row(job_id) == ("PENDING", "None", "")
    # Only while pending.
    started = submit(alice)
    schedule_pass()
    assert row(started)[0] == "RUNNING"
    with pytest.raises(ServiceError, match="Job is no longer pending execution"):
        job_update(actor=alice, job_id=started, changes={"dependency": f"afterany:{blocker}"})
    # Another user's job is not alice's to update.
    bobs = submit(users["bob"], begin="now+3600")
    with pytest.raises(ServiceError):
        job_update(actor=alice, job_id=bobs, changes={"dependency": ""})


def test_a_cancelled_job_fails_afterok_and_fulfils_afternotok(demo, users):
    register()
    alice = users["alice"]
    gone = submit(alice, begin="now+3600")
    ok = submit(alice, dependency=f"afterok:{gone}")
    notok = submit(alice, dependency=f"afternotok:{gone}")
    job_cancel(actor=alice, job_id=gone)
    schedule_pass()
    assert row(ok)[:2] == ("PENDING", "DependencyNeverSatisfied")
    assert row(notok)[0] == "RUNNING"


def test_the_pass_reads_the_jobs_named_in_one_statement(demo, users):
    """However long the chain, building the pass's snapshot takes the same statements:
    the jobs the dependencies name are read together, by id."""
    alice = users["alice"]
    register()

    def chain(length: int) -> int:
        Job.objects.all().delete()
        previous = submit(alice, begin="now+3600")
        for _ in range(length):
            previous = submit(alice, dependency=f"afterok:{previous}")
        with CaptureQueriesContext(connection) as ctx:
            build_snapshot(timezone.now())
        return len(ctx.captured_queries)

    short, long = chain(3), chain(60)
    assert short == long
    Job.objects.exclude(dependency="").delete()
    with CaptureQueriesContext(connection) as ctx:
        build_snapshot(timezone.now())
    # Without any dependency the pass reads nothing for them: one statement fewer.
    assert len(ctx.captured_queries) == short - 1
