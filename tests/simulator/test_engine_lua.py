"""Lua plugins run in the simulator too (#18 point 1): a job_submit.lua beside slurm.conf
(JobSubmitPlugins=lua) refuses a job of the workload, and an hres/lua resource's
hres_validate_args and hres_controller_job_prerun are called for the jobs that ask for it,
through the live services the engine drives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hres import lua_async_owner, lua_plugins
from luaplug.hres_functions import REQUIRED
from simulator.engine import Engine
from simulator.records import SimJob

CONF = Path(__file__).parent / "conf"

# Refuses the job named "refused", lets the others through unchanged.
JOB_SUBMIT = """\
function slurm_job_submit(job_desc, part_list, submit_uid)
  if job_desc.name == "refused" then
    slurm.user_msg("jobs named refused are not taken")
    return slurm.ERROR
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
"""

RESOURCES = """\
---
- resource: qpu
  mode: MODE_1
  plugin:
    type: hres/lua
    config:
      - name: path
        value: {path}
  layers:
    - layer_name: all
      nodes: ["n[1-4]"]
      count: 2
"""


def hres_script(path: Path, log: Path) -> None:
    """Every function of hres/lua appends its name to ``log`` (one line a call) and
    succeeds; the prerun (ctx, job, prep) also names the job it was called for."""
    note = 'function note(s) local f = io.open(LOG, "a"); f:write(s .. "\\n"); f:close() end'
    parts = [f'local LOG = "{log}"\n{note}\n']
    for name in (*REQUIRED, "hres_validate_args"):
        body = "note(name)"
        if name == "hres_controller_job_prerun":
            body = 'note(name .. " " .. tostring(a.job_id))'
        head = f'function {name}(ctx, a, b, c, d)\n  local name = "{name}"'
        parts.append(f"{head}\n  {body}\n  return slurm.SUCCESS\nend\n")
    path.write_text("\n".join(parts))
    path.chmod(0o644)  # the security check refuses a script others may write


JOBS = [
    SimJob(job_id=1, submit=0, run_time=30, user="alice", ntasks=1, licenses="qpu:1"),
    SimJob(job_id=2, submit=1, run_time=30, user="bob", ntasks=1, name="refused"),
    SimJob(job_id=3, submit=2, run_time=30, user="bob", ntasks=1, licenses="qpu:1"),
    SimJob(job_id=4, submit=3, run_time=20, user="alice", ntasks=2),
]


@pytest.fixture
def lua_run(transactional_db, tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    calls = tmp_path / "calls.log"
    calls.touch()
    hres_script(conf / "qpu.lua", calls)
    (conf / "resources.yaml").write_text(RESOURCES.format(path=conf / "qpu.lua"))
    (conf / "job_submit.lua").write_text(JOB_SUBMIT)
    (conf / "job_submit.lua").chmod(0o644)
    slurm_conf = conf / "slurm.conf"
    slurm_conf.write_text(slurm_conf.read_text() + "JobSubmitPlugins=lua\n")
    out = tmp_path / "out"
    try:
        Engine(conf_dir=conf, jobs=JOBS, out_dir=out, workload_name="lua").run()
        lines = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
        yield lines, calls.read_text().splitlines()
    finally:
        lua_plugins.install(lua_plugins.Prepared({}, {}))
        lua_async_owner.release()


def test_job_submit_lua_refuses_one_job_and_the_others_run(lua_run):
    lines, _ = lua_run
    rejects = [e for e in lines if e["event"] == "reject"]
    assert rejects == [
        {
            "t": 1,
            "event": "reject",
            "job": 2,
            "error": "sbatch: error: jobs named refused are not taken\n"
            "sbatch: error: Batch job submission failed: Unspecified error",
        }
    ]
    ends = {e["job"]: e["state"] for e in lines if e["event"] == "end"}
    assert ends == {1: "COMPLETED", 3: "COMPLETED", 4: "COMPLETED"}
    assert lines[-1]["event"] == "done" and lines[-1]["jobs"] == 4


def test_hres_lua_validates_and_preruns_the_jobs_that_ask_for_its_resource(lua_run):
    lines, calls = lua_run
    fsched = {e["job"]: e["fsched_id"] for e in lines if e["event"] == "submit"}
    # Loaded with the configuration, once.
    assert calls.count("hres_create_context") == 1
    # Each request for qpu is validated at its submission (jobs 1 and 3 only) ...
    assert calls.count("hres_validate_args") == 2
    # ... and each is prerun once, when the live pass allocates it.
    preruns = sorted(c for c in calls if c.startswith("hres_controller_job_prerun"))
    assert preruns == sorted(f"hres_controller_job_prerun {fsched[j]}" for j in (1, 3))
    # Its layer was used and given back, as hres recorded it.
    used = [e["used"] for e in lines if e["event"] == "layers" and e["resource"] == "qpu"]
    assert max(used) >= 1 and used[-1] == 0
