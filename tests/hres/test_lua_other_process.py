"""hres/lua in a process that did not read the configuration (#17, distributed mode): a
server process other than the one that started or reconfigured, or a Celery worker.

Such a process begins with no script: :func:`forget` puts this test process in that state
(the scripts are the process's own, in ``hres.lua_plugins``; the database is shared).  It
loads the scripts of the configuration in force when it first needs them, runs create
context on them with its result logged only, follows a reconfigure made elsewhere, and
keeps the single controller's rules: a changed script reloaded (globals dropped, create
context not called again), one that no longer loads keeping the last good one."""

from __future__ import annotations

import logging

import pytest

from cluster import cycles
from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.errors import ServiceError
from cluster.services.scheduling import schedule_pass
from hres import lua_plugins, lua_process
from hres.lua_callbacks import job_preps
from tests.hres.test_lua_callbacks import cluster, disabled, started, submit  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


def forget() -> tuple[lua_plugins.Prepared, int | None]:
    """This process as one that never read the configuration; what it had, returned."""
    had = (lua_plugins.loaded(), lua_plugins.installed_version())
    lua_plugins.install(lua_plugins.Prepared({}, {}))
    return had


def test_it_loads_the_scripts_in_force_when_first_needed_and_creates_their_context_once(cluster):  # noqa: F811
    started(cluster, "qpu", "ion")
    forget()
    assert lua_plugins.resources_with_plugins() == ("qpu", "ion")
    assert cluster.calls() == ["hres_create_context qpu", "hres_create_context ion"]
    assert lua_plugins.resources_with_plugins() == ("qpu", "ion")
    assert cluster.calls() == []


def test_its_pass_runs_the_prerun_and_keeps_the_payload(cluster, users):  # noqa: F811
    started(cluster, "qpu", hres_controller_job_prerun='return slurm.SUCCESS, "token=" .. a.job_id')
    job_id = submit(users["alice"], licenses="qpu:1")
    forget()
    cluster.calls()
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == JobState.RUNNING
    assert cluster.calls() == ["hres_create_context qpu", "hres_controller_job_prerun qpu"]
    assert job_preps(job_id, 0)[0]["payload"] == f"token={job_id}"


def test_its_submissions_are_validated(cluster, users):  # noqa: F811
    started(cluster, "qpu", hres_validate_args='slurm.user_msg("mode " .. a.mode) return slurm.ERROR')
    forget()
    with pytest.raises(ServiceError) as caught:
        submit(users["alice"], licenses="qpu:1[mode=slow]")
    assert caught.value.err_msg == "mode slow"
    assert not Job.objects.exists()


def test_a_changed_script_is_reloaded_its_globals_dropped_without_a_new_create_context(cluster, users):  # noqa: F811
    started(
        cluster,
        "qpu",
        hres_create_context="seen = 1",
        hres_validate_args='note("seen " .. tostring(seen))',
    )
    forget()
    submit(users["alice"], licenses="qpu:1[mode=a]")
    assert cluster.calls() == ["hres_create_context qpu", "hres_validate_args qpu", "seen 1"]
    cluster.script("qpu", hres_validate_args='note("now " .. tostring(seen))')
    submit(users["alice"], licenses="qpu:1[mode=a]")
    assert cluster.calls() == ["hres_validate_args qpu", "now nil"]


def test_a_script_that_no_longer_loads_keeps_the_last_good_one(cluster, users, caplog):  # noqa: F811
    started(cluster, "qpu", hres_validate_args='note("good")')
    forget()
    lua_plugins.resources_with_plugins()
    path = cluster.conf / "qpu.lua"
    path.write_text(path.read_text() + "\nthis is not lua\n")
    submit(users["alice"], licenses="qpu:1[mode=a]")
    assert cluster.calls() == ["hres_create_context qpu", "hres_validate_args qpu", "good"]
    assert "using previous script" in caplog.text


def test_a_reconfigure_made_elsewhere_is_followed(cluster):  # noqa: F811
    started(cluster, "qpu")
    lua_plugins.resources_with_plugins()
    had = lua_plugins.loaded(), lua_plugins.installed_version()
    # Another process reconfigures with a second resource; this one still has qpu only.
    cluster.script("ion")
    cluster.resources("qpu", "ion")
    cluster.load()
    lua_plugins.install(*had)
    cluster.calls()
    assert lua_plugins.resources_with_plugins() == ("qpu", "ion")
    # As the reconfigure did where it was made: the old contexts end, the new ones begin.
    assert cluster.calls() == [
        "hres_destroy_context qpu",
        "hres_create_context qpu",
        "hres_create_context ion",
    ]


@pytest.mark.parametrize("code", ["slurm.ERROR", "slurm.ESLURM_HRES_MAINTENANCE_DISABLE"])
def test_its_create_context_result_is_only_logged(cluster, caplog, code):  # noqa: F811
    flag = cluster.conf / "refuse"
    started(cluster, "qpu", hres_create_context=f'if io.open("{flag}") then return {code} end')
    flag.touch()
    forget()
    with caplog.at_level(logging.WARNING, logger="fsched.hres.lua"):
        assert lua_plugins.resources_with_plugins() == ("qpu",)
    assert "hres_create_context" in caplog.text
    # Acted on by the process that read the configuration only: no layer disabled here.
    assert disabled("qpu") == {"qpu1": False, "qpu2": False}


def test_a_script_it_cannot_load_leaves_jobs_pending_and_refuses_submissions(
    cluster,  # noqa: F811
    users,
    monkeypatch,
):
    started(cluster, "qpu", hres_controller_job_prerun='return slurm.SUCCESS, "p"')
    job_id = submit(users["alice"], licenses="qpu:1")
    path = cluster.conf / "qpu.lua"
    path.chmod(0o666)  # the security check refuses it now
    forget()
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold) == (JobState.PENDING, "")  # never started without its pre-run
    with pytest.raises(ServiceError) as caught:
        submit(users["alice"], licenses="qpu:1")
    assert "writable by others (mode 0666)" in caught.value.err_msg
    assert caught.value.err_msg.endswith("not loaded in this process")
    # Mended: tried again (at most every RETRY seconds), then used.
    path.chmod(0o644)
    monkeypatch.setattr(lua_process, "RETRY", 0.0)
    cluster.calls()
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == JobState.RUNNING
    assert cluster.calls() == ["hres_create_context qpu", "hres_controller_job_prerun qpu"]


def test_the_maintenance_cycles_are_listed_without_loading_a_script_and_run_here(cluster):  # noqa: F811
    started(cluster, "qpu", hres_maintenance="a[2].disable_layer = true")
    forget()
    assert "hres_maintenance_qpu" in cycles.periodic()
    assert cluster.calls() == []  # listing them (as Celery beat does) loads nothing
    assert cycles.run_named("hres_maintenance_qpu") == "rc=0 disabled=qpu2"
    assert cluster.calls() == ["hres_create_context qpu", "hres_maintenance qpu"]
