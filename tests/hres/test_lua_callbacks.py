"""hres/lua's controller callbacks (#17 points 2, 3, 5 and 8), driven by small Lua scripts:
one test per row of the callback table, success and failure, with the job's, the node's
and the layer's state afterwards; the order of several resources."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from django.utils import timezone

from cluster import cycles
from cluster.core.states import JobState
from cluster.models import Job
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_requeue, job_submit, job_update
from cluster.services.scheduling import schedule_pass
from hres import lua_async_owner, lua_callbacks, lua_maintenance, lua_plugins, services
from hres.lua_callbacks import job_preps
from hres.models import JobPluginRun, LayerUpdate, ResourcesFile

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
NODES = [f"node{i:02d}" for i in range(1, 5)]


def lua(path: Path, log: Path, **functions: str) -> Path:
    """A script whose every required function appends its name (and the resource's) to
    ``log``; ``functions`` replace a function's body (after that line)."""
    names = [*lua_plugins.REQUIRED, "hres_validate_args"]
    parts = [
        textwrap.dedent(
            f"""\
            local LOG = "{log}"
            function note(s) local f = io.open(LOG, "a"); f:write(s .. "\\n"); f:close() end
            """
        )
    ]
    for name in names:
        first = (
            "ctx"
            if name.startswith(("hres_create", "hres_destroy", "hres_maint", "hres_valid", "hres_contr"))
            else "prep"
        )
        body = functions.get(name, "return slurm.SUCCESS")
        parts.append(
            f"function {name}({first}, a, b, c, d)\n"
            f'  note("{name} " .. ({first}.name or "?"))\n'
            f"  {body}\nend\n"
        )
    path.write_text("\n".join(parts))
    path.chmod(0o644)
    return path


RESOURCES = """\
- resource: {name}
  mode: MODE_1
  plugin:
    type: hres/lua
    config:
      - name: path
        value: {path}
      - name: service
        value: https://{name}.example
    maintenance_cycle: 30
    maintenance_timeout: 1
  layers:
    - layer_name: {name}1
      nodes: ["node[01-02]"]
      count: 2
    - layer_name: {name}2
      nodes: ["node[03-04]"]
      count: 2
"""


class Cluster:
    def __init__(self, conf: Path) -> None:
        self.conf = conf
        self.log = conf / "calls.log"
        self.log.touch()

    def script(self, name: str, **functions: str) -> Path:
        return lua(self.conf / f"{name}.lua", self.log, **functions)

    def resources(self, *names: str) -> None:
        text = "".join(RESOURCES.format(name=n, path=self.conf / f"{n}.lua") for n in names)
        (self.conf / "resources.yaml").write_text(text)

    def load(self, extra: str = "") -> None:
        conf = self.conf / "slurm.conf"
        if extra:
            conf.write_text(conf.read_text() + extra + "\n")
        config_load(path=conf)

    def calls(self) -> list[str]:
        lines = self.log.read_text().splitlines()
        self.log.write_text("")
        return lines


@pytest.fixture
def cluster(tmp_path, settings):
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "examples" / "demo", conf)
    with (conf / "partitions.conf").open("a") as f:
        f.write("PartitionName=q Nodes=node[01-04] MaxTime=60 DefaultTime=10\n")
    settings.CONF_DIR = conf
    lua_plugins.install(lua_plugins.Prepared({}, {}))
    yield Cluster(conf)
    lua_plugins.install(lua_plugins.Prepared({}, {}))
    lua_async_owner.release()  # its connection would keep PostgreSQL's test database in use


def register() -> None:
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 4000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )


def started(cluster: Cluster, *names: str, extra: str = "", **functions: str) -> None:
    for name in names:
        if functions or not (cluster.conf / f"{name}.lua").exists():
            cluster.script(name, **functions)
    cluster.resources(*names)
    cluster.load(extra)
    register()
    cluster.calls()


def submit(user, **spec) -> int:
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "q", **spec}
    return job_submit(user=user, spec=spec).job_ids[0]


def finish(job_id: int) -> None:
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


def disabled(resource: str) -> dict[str, bool]:
    state = services.current_state().resource(resource)
    return {layer.name: layer.disabled for layer in state.structure.layers}


# --------------------------------------------------------------------------- create context


def test_create_context_sees_the_layers_as_configured_with_nothing_used(cluster):
    cluster.script(
        "qpu",
        hres_create_context='note(a[1].name .. " " .. a[1].nodes .. " " .. a[1].total .. " " .. a[1].used'
        ' .. " " .. tostring(a[1].disable_layer) .. " " .. ctx.config.service)',
    )
    cluster.resources("qpu")
    cluster.load()
    assert cluster.calls() == ["hres_create_context qpu", "qpu1 node[01-02] 2 0 false https://qpu.example"]
    assert disabled("qpu") == {"qpu1": False, "qpu2": False}


@pytest.mark.parametrize("code", ["ESLURM_HRES_MAINTENANCE_DISABLE", "ESLURM_HRES_MAINTENANCE_DOWN"])
def test_create_context_maintenance_codes_disable_every_layer(cluster, code):
    cluster.script("qpu", hres_create_context=f"return slurm.{code}")
    cluster.resources("qpu")
    cluster.load()
    assert disabled("qpu") == {"qpu1": True, "qpu2": True}
    assert LayerUpdate.objects.filter(resource="qpu", user="slurm").count() == 2


def test_create_context_error_refuses_the_start_naming_the_resource(cluster):
    cluster.script("qpu", hres_create_context='slurm.user_msg("no quantum today") return slurm.ERROR')
    cluster.resources("qpu")
    with pytest.raises(ServiceError) as caught:
        cluster.load()
    assert "resource qpu: hres/lua: hres_create_context failed: no quantum today" in str(caught.value)
    assert ResourcesFile.current().version == 0  # nothing applied
    # A Lua error is an error too.
    cluster.script("qpu", hres_create_context='error("boom")')
    with pytest.raises(ServiceError, match=r"resource qpu: hres/lua: hres_create_context failed: .*boom"):
        cluster.load()


# --------------------------------------------------------------------------- destroy context


def test_destroy_context_runs_before_the_configuration_is_read_again(cluster):
    started(cluster, "qpu")
    cluster.load()
    assert cluster.calls() == ["hres_destroy_context qpu", "hres_create_context qpu"]


def test_a_failing_destroy_context_is_ignored(cluster):
    started(cluster, "qpu", hres_destroy_context='error("gone")')
    cluster.load()
    assert cluster.calls() == ["hres_destroy_context qpu", "hres_create_context qpu"]
    assert lua_plugins.resources_with_plugins() == ("qpu",)


# --------------------------------------------------------------------------- validate arguments


def test_validate_arguments_accepts_a_submission_with_the_jobs_arguments(cluster, users):
    started(cluster, "qpu", hres_validate_args='note(a.mode .. " " .. a.shots)')
    job_id = submit(users["alice"], licenses="qpu:1[mode=fast,shots=1000]")
    assert cluster.calls() == ["hres_validate_args qpu", "fast 1000"]
    assert Job.objects.get(pk=job_id).state == JobState.PENDING


def test_validate_arguments_error_rejects_the_submission_with_the_plugins_message(cluster, users):
    started(
        cluster,
        "qpu",
        hres_validate_args='if a.mode ~= "fast" then slurm.user_msg("mode must be fast") '
        "return slurm.ERROR end",
    )
    with pytest.raises(ServiceError) as caught:
        submit(users["alice"], licenses="qpu:1[mode=slow]")
    assert str(caught.value) == "Invalid license specification"
    assert caught.value.err_msg == "mode must be fast"
    assert not Job.objects.exists()


def test_validate_arguments_error_rejects_a_licenses_update(cluster, users):
    started(
        cluster,
        "qpu",
        hres_validate_args='if a.mode == "slow" then slurm.user_msg("mode must be fast") '
        "return slurm.ERROR end",
    )
    job_id = submit(users["alice"], licenses="qpu:1[mode=fast]", hold=True)
    with pytest.raises(ServiceError, match="Invalid license specification"):
        job_update(actor=users["alice"], job_id=job_id, changes={"licenses": "qpu:1[mode=slow]"})
    assert Job.objects.get(pk=job_id).licenses == "qpu:1[mode=fast]"


def test_validate_arguments_error_holds_a_pending_job_at_reconfigure(cluster, users):
    started(cluster, "qpu")
    job_id = submit(users["alice"], licenses="qpu:1[mode=slow]", begin="now+1hour")
    cluster.script(
        "qpu",
        hres_validate_args='if a.mode == "slow" then slurm.user_msg("slow mode retired") '
        "return slurm.ERROR end",
    )
    cluster.load()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold, job.reason) == (JobState.PENDING, "admin", "slow mode retired")


@pytest.mark.parametrize(
    ("licenses", "message"),
    [("qpu:1[mode=a, b=c]", "whitespace"), ("qpu:1[mode=a,mode=b]", "plugin argument mode given twice")],
)
def test_plugin_arguments_with_whitespace_or_a_repeated_name_are_rejected(cluster, users, licenses, message):
    started(cluster, "qpu")
    with pytest.raises(ServiceError, match=message):
        submit(users["alice"], licenses=licenses)
    assert not Job.objects.exists()


# --------------------------------------------------------------------------- pre-run, revoke, epilog


def test_prerun_payload_is_kept_with_the_job_and_its_epilog_runs_at_the_end(cluster, users):
    started(
        cluster,
        "qpu",
        hres_controller_job_prerun='note(a.job_id .. " " .. a.nodes .. " " .. b.plugin_args.mode .. " "'
        ' .. b.layers[1].name .. "*" .. b.layers[1].count) return slurm.SUCCESS, "token=" .. a.job_id',
        hres_controller_job_epilog='note("payload " .. b.payload)',
    )
    job_id = submit(users["alice"], licenses="qpu:1[mode=fast]")
    cluster.calls()
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == JobState.RUNNING
    assert cluster.calls() == ["hres_controller_job_prerun qpu", f"{job_id} {job.node_list} fast qpu1*1"]
    (prep,) = job_preps(job_id, 0)
    assert prep["payload"] == f"token={job_id}"
    assert prep["plugin_args"] == {"mode": "fast"}
    assert prep["config"]["service"] == "https://qpu.example"
    finish(job_id)
    assert Job.objects.get(pk=job_id).state == JobState.COMPLETED
    assert cluster.calls() == ["hres_controller_job_epilog qpu", f"payload token={job_id}"]
    assert JobPluginRun.objects.get(job_id=job_id).epilog_done


def test_prerun_remote_fail_leaves_the_job_pending(cluster, users):
    started(cluster, "qpu", hres_controller_job_prerun="return slurm.ESLURM_HRES_REMOTE_FAIL")
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold, job.node_list) == (JobState.PENDING, "", "")
    assert services.state_with_usage().resource("qpu").used == (0, 0)


def test_prerun_error_holds_the_job_with_the_plugins_message(cluster, users):
    started(cluster, "qpu", hres_controller_job_prerun='slurm.user_msg("qpu calibrating") return slurm.ERROR')
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold, job.reason) == (JobState.PENDING, "admin", "qpu calibrating")
    assert not JobPluginRun.objects.exists()


def test_preruns_run_in_resources_yaml_order_and_stop_at_the_first_failure(cluster, users):
    cluster.script("qpu", hres_controller_job_prerun="return slurm.ERROR")
    started(cluster, "qpu", "ion")
    job_id = submit(users["alice"], licenses="ion:1,qpu:1")
    cluster.calls()
    schedule_pass()
    # ion would come second: never called, and nothing to revoke.
    assert cluster.calls() == ["hres_controller_job_prerun qpu"]
    assert Job.objects.get(pk=job_id).hold == "admin"


def test_a_later_prerun_failure_revokes_the_earlier_ones(cluster, users):
    cluster.script("qpu", hres_controller_job_prerun='return slurm.SUCCESS, "p"')
    cluster.script("ion", hres_controller_job_prerun="return slurm.ESLURM_HRES_REMOTE_FAIL")
    cluster.resources("qpu", "ion")
    cluster.load()
    register()
    job_id = submit(users["alice"], licenses="qpu:1,ion:1")
    cluster.calls()
    schedule_pass()
    assert cluster.calls() == [
        "hres_controller_job_prerun qpu",
        "hres_controller_job_prerun ion",
        "hres_controller_job_revoke qpu",
    ]
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold) == (JobState.PENDING, "")


def test_controller_epilogs_run_in_reverse_order_and_a_failure_is_only_logged(cluster, users):
    cluster.script("qpu", hres_controller_job_epilog='error("service down")')
    started(cluster, "qpu", "ion")
    job_id = submit(users["alice"], licenses="qpu:1,ion:1")
    cluster.calls()
    schedule_pass()
    assert cluster.calls() == ["hres_controller_job_prerun qpu", "hres_controller_job_prerun ion"]
    finish(job_id)
    assert cluster.calls() == ["hres_controller_job_epilog ion", "hres_controller_job_epilog qpu"]
    assert Job.objects.get(pk=job_id).state == JobState.COMPLETED
    assert services.state_with_usage().resource("qpu").used == (0, 0)


def test_a_requeued_job_gets_its_epilog_then_its_arguments_validated_again(cluster, users):
    started(cluster, "qpu")
    job_id = submit(users["alice"], licenses="qpu:1[mode=fast]")
    schedule_pass()
    cluster.script("qpu", hres_validate_args='slurm.user_msg("fast mode retired") return slurm.ERROR')
    cluster.calls()
    job_requeue(actor=users["alice"], job_id=job_id)
    finish(job_id)
    assert cluster.calls() == ["hres_controller_job_epilog qpu", "hres_validate_args qpu"]
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold, job.reason) == (JobState.PENDING, "admin", "fast mode retired")


# --------------------------------------------------------------------------- timeouts


def test_prolog_timeout_stops_a_prerun_that_loops_and_holds_the_job(cluster, users):
    started(cluster, "qpu", extra="PrologTimeout=1", hres_controller_job_prerun="while true do end")
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold) == (JobState.PENDING, "admin")
    assert job.reason_detail == "hres/lua: hres_controller_job_prerun: timed out after 1 s"


def test_prolog_epilog_timeout_bounds_the_create_context(cluster):
    cluster.script("qpu", hres_create_context="while true do end")
    cluster.resources("qpu")
    with pytest.raises(ServiceError, match=r"hres_create_context failed: .*timed out after 1 s"):
        cluster.load("PrologEpilogTimeout=1")


# --------------------------------------------------------------------------- maintenance


def test_each_resources_maintenance_is_one_of_the_cycles(cluster):
    started(cluster, "qpu", "ion")
    specs = {c.name: c for c in cycles.cycle_specs()}
    assert specs["hres_maintenance_qpu"].interval == 30
    assert "hres_maintenance_ion" in cycles.periodic()


def test_maintenance_sets_and_clears_disable_layer(cluster):
    started(
        cluster,
        "qpu",
        hres_maintenance='note(a[2].name .. " used " .. a[2].used) a[2].disable_layer = true',
    )
    result = lua_maintenance.maintenance("qpu")
    assert result == "rc=0 disabled=qpu2"
    assert disabled("qpu") == {"qpu1": False, "qpu2": True}
    cluster.script("qpu", hres_maintenance="a[2].disable_layer = false")
    assert lua_maintenance.maintenance("qpu") == "rc=0 enabled=qpu2"
    assert disabled("qpu") == {"qpu1": False, "qpu2": False}


def test_maintenance_down_requeues_the_layers_jobs_or_cancels_those_that_cannot_be(cluster, users):
    started(cluster, "qpu")
    again = submit(users["alice"], licenses="qpu:1", nodelist="node01")
    once = submit(users["alice"], licenses="qpu:1", nodelist="node02", requeue=False)
    elsewhere = submit(users["alice"], licenses="qpu:1", nodelist="node03")
    schedule_pass()
    assert set(Job.objects.values_list("state", flat=True)) == {JobState.RUNNING}
    cluster.script("qpu", hres_maintenance="a[1].down = true")
    assert lua_maintenance.maintenance("qpu") == "rc=0 down=qpu1 requeued=1 cancelled=1"
    assert disabled("qpu") == {"qpu1": True, "qpu2": False}
    assert Job.objects.get(pk=again).final_state == JobState.REQUEUED
    assert Job.objects.get(pk=once).final_state == JobState.CANCELLED
    assert Job.objects.get(pk=elsewhere).final_state == ""


def test_a_failing_maintenance_is_logged_and_what_it_set_still_applies(cluster, caplog):
    started(cluster, "qpu", hres_maintenance='a[1].disable_layer = true error("probe failed")')
    assert lua_maintenance.maintenance("qpu").startswith("failed rc=-1 (hres/lua: hres_maintenance: ")
    assert "probe failed" in caplog.text
    assert disabled("qpu")["qpu1"] is True


def test_maintenance_timeout_stops_a_maintenance_that_loops(cluster):
    started(cluster, "qpu", hres_maintenance="while true do end")
    result = lua_maintenance.maintenance("qpu")
    assert result == "failed rc=-1 (hres/lua: hres_maintenance: timed out after 1 s)"
    assert disabled("qpu") == {"qpu1": False, "qpu2": False}


def test_maintenance_has_a_state_of_its_own(cluster):
    started(
        cluster,
        "qpu",
        hres_create_context="seen = 1",
        hres_maintenance='note("seen " .. tostring(seen))',
    )
    lua_maintenance.maintenance("qpu")
    assert cluster.calls() == ["hres_maintenance qpu", "seen nil"]


def test_epilog_timeout_stops_a_controller_epilog_and_the_job_still_ends(cluster, users, caplog):
    started(cluster, "qpu", extra="EpilogTimeout=1", hres_controller_job_epilog="while true do end")
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    finish(job_id)
    assert Job.objects.get(pk=job_id).state == JobState.COMPLETED
    assert "hres_controller_job_epilog: timed out after 1 s" in caplog.text
    assert JobPluginRun.objects.get(job_id=job_id).epilog_done


def test_a_validate_arguments_that_loops_rejects_the_submission(cluster, users):
    started(cluster, "qpu", extra="PrologEpilogTimeout=1", hres_validate_args="while true do end")
    with pytest.raises(ServiceError) as caught:
        submit(users["alice"], licenses="qpu:1[mode=fast]")
    assert caught.value.err_msg == "hres/lua: hres_validate_args: timed out after 1 s"
    assert not Job.objects.exists()


def test_destroy_context_runs_at_shutdown(cluster):
    started(cluster, "qpu")
    lua_callbacks.destroy_contexts()  # what destroy_at_exit registers with atexit
    assert cluster.calls() == ["hres_destroy_context qpu"]


def test_the_prerun_gets_the_expected_end_from_the_partitions_default_time(cluster, users):
    started(cluster, "qpu", hres_controller_job_prerun='note("ends in " .. (a.end_time - os.time()))')
    submit(users["alice"], licenses="qpu:1")
    cluster.calls()
    schedule_pass()
    (_name, line) = cluster.calls()
    assert 598 <= int(line.removeprefix("ends in ")) <= 600  # partition q: DefaultTime=10


def test_a_refused_reconfigure_creates_the_contexts_of_the_configuration_kept_again(cluster):
    started(cluster, "qpu")
    cluster.script("qpu", hres_create_context="if not tried then tried = 1 return slurm.ERROR end")
    with pytest.raises(ServiceError, match="hres_create_context failed"):
        cluster.load()
    # The state is the one in use (the changed script reloaded into it): tried is set.
    assert cluster.calls() == [
        "hres_destroy_context qpu",
        "hres_create_context qpu",
        "hres_create_context qpu",
    ]
    assert lua_plugins.resources_with_plugins() == ("qpu",)


def test_the_maintenance_cycle_is_a_row_the_admin_edits_with_the_others(cluster):
    from cycles.models import CycleStatus
    from cycles.rows import cycles_sync

    started(cluster, "qpu")
    cycles_sync()
    status = CycleStatus.objects.select_related("task__interval").get(task__name="hres_maintenance_qpu")
    assert status.default_seconds == 30
    assert status.task.description.startswith("hres/lua maintenance of the resource qpu")
