"""JobSubmitPlugins=lua (#17 point 7): job_submit.lua beside slurm.conf, through the real
``fsched sbatch`` and ``fsched scontrol`` against a live controller."""

from __future__ import annotations

import logging

import pytest

from cluster.models import Job
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError

pytestmark = pytest.mark.django_db(transaction=True)

# The example of Slurm's resource_limits.html ("Specific limits over GRES"), exactly as
# written there, with its missing final return.
TYPED_GPU_SCRIPT = """\
function slurm_job_submit(job_desc, part_list, submit_uid)
gres_request = ""
t = {job_desc.tres_per_job,
job_desc.tres_per_socket,
job_desc.tres_per_task,
job_desc.tres_per_node}
for k in pairs(t) do
gres_request = gres_request .. t[k] .. ","
end
if (gres_request ~= nil)
then
for g in gres_request:gmatch("[^,]+")
do
bad = string.match(g,'^gres/gpu[:=]*[0-9]*$')
if (bad ~= nil)
then
slurm.log_info("User specified gpu GRES without type: %s", bad)
slurm.user_msg("You must always specify a type when requesting gpu GRES")
return slurm.ERROR
end
end
end
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
return slurm.SUCCESS
end
"""


@pytest.fixture
def lua_conf(conf_dir, settings):
    """use(script) -> the demo configuration with JobSubmitPlugins=lua and ``script`` as
    job_submit.lua beside slurm.conf, loaded."""
    settings.CONF_DIR = conf_dir
    conf = conf_dir / "slurm.conf"
    conf.write_text(conf.read_text() + "JobSubmitPlugins=lua\n")

    def use(script: str) -> None:
        path = conf_dir / "job_submit.lua"
        path.write_text(script)
        path.chmod(0o644)
        config_load(path=conf)

    return use


def test_the_spec_example_rejects_an_untyped_gpu_request_and_accepts_a_typed_one(lua_conf, live_cli, caplog):
    lua_conf(TYPED_GPU_SCRIPT)
    with caplog.at_level(logging.INFO, logger="fsched.job_submit"):
        status, out, err = live_cli("alice", "sbatch", "--gres=gpu:2", "-H", "--wrap", "true")
    assert (status, out) == (1, "")
    assert err == (
        "sbatch: error: You must always specify a type when requesting gpu GRES\n"
        "sbatch: error: Batch job submission failed: Unspecified error\n"
    )
    assert "job_submit/lua: User specified gpu GRES without type: gres/gpu:2" in caplog.messages
    assert not Job.objects.exists()

    status, out, err = live_cli("alice", "sbatch", "--parsable", "--gres=gpu:tesla:1", "-H", "--wrap", "true")
    assert (status, err) == (0, "")
    job = Job.objects.get(pk=int(out))
    assert job.gres == "gpu:tesla:1"
    # No GRES at all: nothing to check, and the missing return means success.
    assert live_cli("alice", "sbatch", "--parsable", "-H", "--wrap", "true")[0] == 0


EDITING_SCRIPT = """
function slurm_job_submit(job_desc, part_list, submit_uid)
  if job_desc.account == "refused" then
    slurm.user_msg("account refused is closed")
    slurm.user_msg("ask your PI")
    return slurm.ESLURM_INVALID_ACCOUNT
  end
  local unset = job_desc.time_limit == slurm.NO_VAL and job_desc.min_nodes == slurm.NO_VAL
  job_desc.comment = string.format("uid=%s user=%s default=%s unset=%s",
    tostring(submit_uid), job_desc.user_name, tostring(part_list.debug.flag_default), tostring(unset))
  job_desc.time_limit = 7
  job_desc.name = "renamed-" .. (job_desc.name or "none")
  job_desc.cpus_per_task = 2
  job_desc.tres_per_node = "gres/gpu:tesla:1"
  slurm.user_msg("limited to 7 minutes")
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  if job_desc.time_limit ~= slurm.NO_VAL and job_desc.time_limit > 30 then
    slurm.user_msg("at most 30 minutes for " .. job_rec.user_name)
    return slurm.ESLURM_INVALID_TIME_LIMIT
  end
  if job_desc.name ~= nil then
    job_desc.name = job_desc.name .. "-" .. job_rec.job_id
  end
end
"""


def test_changes_to_job_desc_are_applied_and_user_msg_is_printed(lua_conf, live_cli):
    lua_conf(EDITING_SCRIPT)
    status, out, err = live_cli("alice", "sbatch", "--parsable", "-H", "-J", "mine", "--wrap", "true")
    assert (status, err) == (0, "sbatch: limited to 7 minutes\n")
    job = Job.objects.get(pk=int(out))
    assert (job.time_limit, job.name, job.cpus_per_task, job.gres) == (7, "renamed-mine", 2, "gpu:tesla:1")
    assert job.comment.startswith("uid=") and " user=alice default=1 unset=true" in job.comment

    status, out, err = live_cli("alice", "sbatch", "-A", "refused", "--wrap", "true")
    assert (status, out) == (1, "")
    assert err == (
        "sbatch: error: account refused is closed\n"
        "sbatch: error: ask your PI\n"
        "sbatch: error: Batch job submission failed: "
        "Invalid account or account/partition combination specified\n"
    )


def test_slurm_job_modify_sees_scontrol_update_and_its_changes_are_applied(lua_conf, live_cli):
    lua_conf(EDITING_SCRIPT)
    job_id = int(live_cli("alice", "sbatch", "--parsable", "-H", "--wrap", "true")[1])
    status, _, err = live_cli("alice", "scontrol", "update", f"JobId={job_id}", "TimeLimit=60")
    assert status == 1
    assert err == (
        "scontrol: error: at most 30 minutes for alice\n"
        f"Requested time limit is invalid (missing or exceeds some limit) for job {job_id}\n"
    )
    assert Job.objects.get(pk=job_id).time_limit == 7
    status, _, err = live_cli("alice", "scontrol", "update", f"JobId={job_id}", "JobName=new", "TimeLimit=5")
    assert (status, err) == (0, "")
    job = Job.objects.get(pk=job_id)
    assert (job.name, job.time_limit) == (f"new-{job_id}", 5)


def test_a_script_that_loops_forever_fails_the_submission_and_never_hangs(lua_conf, live_cli, conf_dir):
    conf = conf_dir / "slurm.conf"
    conf.write_text(conf.read_text() + "MessageTimeout=1\n")
    lua_conf(
        "function slurm_job_submit(d, p, u) while true do end end\n"
        "function slurm_job_modify(d, r, p, u) end\n"
    )
    status, _, err = live_cli("alice", "sbatch", "--wrap", "true")
    assert status == 1
    assert err == (
        "sbatch: error: job_submit/lua: slurm_job_submit: timed out after 1 s\n"
        "sbatch: error: Batch job submission failed: Unspecified error\n"
    )


def test_an_unloadable_script_refuses_the_start_and_a_reconfigure_keeps_the_last_one(
    conf_dir, settings, live_cli, caplog
):
    settings.CONF_DIR = conf_dir
    conf = conf_dir / "slurm.conf"
    conf.write_text(conf.read_text() + "JobSubmitPlugins=lua\n")
    script = conf_dir / "job_submit.lua"
    # Missing.
    with pytest.raises(ServiceError) as caught:
        config_load(path=conf)
    assert "job_submit.lua: job_submit/lua: No such file or directory" in str(caught.value)
    # Not valid Lua: file and line.
    script.write_text("function slurm_job_submit(\n")
    with pytest.raises(ServiceError) as caught:
        config_load(path=conf)
    assert "job_submit.lua:2: job_submit/lua: " in str(caught.value)
    # Lacking a required function.
    script.write_text("function slurm_job_submit() end\n")
    with pytest.raises(ServiceError, match="missing required function slurm_job_modify"):
        config_load(path=conf)
    # Writable by others.
    script.write_text(TYPED_GPU_SCRIPT)
    script.chmod(0o666)
    with pytest.raises(ServiceError, match=r"writable by others \(mode 0666\)"):
        config_load(path=conf)

    script.chmod(0o644)
    config_load(path=conf)
    assert live_cli("alice", "sbatch", "--gres=gpu:1", "--wrap", "true")[0] == 1
    # A reconfigure with a broken script keeps the last one that loaded, and says so.
    script.write_text("function slurm_job_submit( end\n")
    with caplog.at_level(logging.WARNING):
        config_load(path=conf)
    assert any("using previous script" in m for m in caplog.messages)
    assert any("the script loaded before stays in use" in m for m in caplog.messages)
    status, _, err = live_cli("alice", "sbatch", "--gres=gpu:1", "--wrap", "true")
    assert status == 1 and "You must always specify a type" in err


def test_a_job_submit_plugin_fsched_does_not_have_refuses_the_configuration(conf_dir, settings):
    settings.CONF_DIR = conf_dir
    conf = conf_dir / "slurm.conf"
    lines = conf.read_text().count("\n")
    conf.write_text(conf.read_text() + "JobSubmitPlugins=lua,job_submit/pbs\n")
    (conf_dir / "job_submit.lua").write_text(TYPED_GPU_SCRIPT)
    with pytest.raises(ServiceError) as caught:
        config_load(path=conf)
    assert f"slurm.conf:{lines + 1}: JobSubmitPlugins: job_submit/pbs is not available (only lua)" in str(
        caught.value
    )
