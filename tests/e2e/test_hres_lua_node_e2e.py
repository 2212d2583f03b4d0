"""The payload example of Slurm's hres.html ("hres/lua") end to end (#17 acceptance,
points 2 and 4): the controller's pre-run returns ``token=<jobid>``, the job's launch
carries it to a real agent, whose node job prolog logs it; the script is the page's, with
the functions hres/lua requires besides returning success, and task functions that note
each task they run for (an srun step's tasks too)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.e2e.harness import DEMO_CONF, FSCHED, E2ECluster, make_cluster, started

pytestmark = pytest.mark.e2e

EXAMPLE = """\
function hres_controller_job_prerun(ctx, job, prep)
slurm.log_info("reserving %s for JobId=%d", prep.name, job.job_id)
return slurm.SUCCESS, "token=" .. job.job_id
end
function hres_node_job_prolog(prep, job)
slurm.log_info("JobId=%d payload %s", job.job_id, prep.payload or "")
return slurm.SUCCESS
end
"""
OTHERS = [
    "hres_create_context",
    "hres_destroy_context",
    "hres_maintenance",
    "hres_controller_job_revoke",
    "hres_controller_job_epilog",
    "hres_node_job_epilog",
]
# The task functions note the task they run for: the node, its node_tid and global_tid.
TASKS = """\
local function note(kind, job, node_tid, global_tid, env)
  local f = io.open("{log}", "a")
  f:write(string.format("%s job=%d step=%s node=%s node_tid=%d global_tid=%d procid=%s\\n", kind,
    job.job_id, env.SLURM_STEP_ID or "batch", env.SLURMD_NODENAME or "?", node_tid, global_tid,
    env.SLURM_PROCID or "-"))
  f:close()
end
function hres_node_task_prolog(prep, job, node_tid, global_tid, env)
  note("task_prolog", job, node_tid, global_tid, env)
end
function hres_node_user_task_prolog(prep, job, node_tid, global_tid, env)
  note("user_task_prolog", job, node_tid, global_tid, env)
end
function hres_node_task_epilog(prep, job, node_tid, global_tid, env)
  note("task_epilog", job, node_tid, global_tid, env)
end
"""
RESOURCE = """\
- resource: qpu
  mode: MODE_1
  plugin:
    type: hres/lua
    config:
      - name: path
        value: {path}
  layers:
    - layer_name: qpu1
      nodes:
        - "node[01-04]"
      count: 1
"""


# Embedded mode only: in distributed mode the scripts are loaded by the server process
# that read the configuration, not by the Celery workers whose passes run the pre-runs
# (docs/lua.md, "Distributed mode").
@pytest.fixture(scope="module", params=["embedded"])
def lua_cluster(request, tmp_path_factory) -> Iterator[E2ECluster]:
    conf = tmp_path_factory.mktemp("hres-lua-conf") / "conf"
    shutil.copytree(DEMO_CONF, conf)
    script = conf / "hres_qpu.lua"
    others = "".join(f"function {name}() return slurm.SUCCESS end\n" for name in OTHERS)
    script.write_text(EXAMPLE + others + TASKS.format(log=conf.parent / "tasks.log"))
    script.chmod(0o644)
    with (conf / "resources.yaml").open("a") as f:
        f.write(RESOURCE.format(path=script))
    with started(make_cluster(tmp_path_factory, request.param, conf_dir=conf), request.param) as c:
        yield c


def test_the_prerun_payload_reaches_the_nodes_job_prolog(lua_cluster, tmp_path):
    c = lua_cluster
    out = c.cli("sbatch", "-p", "debug", "-w", "node02", "-L", "qpu:1", "--wrap", "true", cwd=tmp_path).stdout
    job_id = int(out.split()[-1])
    c.wait_for("the job to complete", lambda: c.jobs(job_id)[job_id]["state"] == "COMPLETED")
    server = (c.state_dir / "server.log").read_text(errors="replace")
    assert f"hres/lua: reserving qpu for JobId={job_id}" in server
    agent = c.state_dir / "agent.log"
    c.wait_for(
        "the node's job prolog to log the payload",
        lambda: f"hres/lua: JobId={job_id} payload token={job_id}" in agent.read_text(errors="replace"),
        timeout=10,
    )


def test_an_srun_step_s_tasks_run_the_task_functions_with_their_ids(lua_cluster, tmp_path):
    """``srun -n 2`` inside a two-node allocation: one task a node, so task 1 is node_tid 0
    on the second node; the user task prolog sees the task's SLURM_PROCID, the root task
    prolog not yet."""
    c = lua_cluster
    batch = tmp_path / "step.sh"
    batch.write_text(f"#!/bin/bash\n{FSCHED} srun -n 2 -l bash -c 'echo rank $SLURM_PROCID'\n")
    options = ["-p", "debug", "-N", "2", "-n", "2", "-w", "node[01-02]", "-L", "qpu:1"]
    out = c.cli(
        "sbatch", "--parsable", *options, "-o", str(tmp_path / "step-%j.out"), str(batch), cwd=tmp_path
    )
    job_id = int(out.stdout)
    running = ("PENDING", "CONFIGURING", "RUNNING")
    c.wait_for("the job to end", lambda: c.jobs(job_id)[job_id]["state"] not in running, timeout=60)
    text = (tmp_path / f"step-{job_id}.out").read_text()
    assert c.jobs(job_id)[job_id]["state"] == "COMPLETED", text
    assert sorted(text.splitlines()) == ["0: rank 0", "1: rank 1"], text
    log = c.conf_dir.parent / "tasks.log"  # beside the configuration, not in it
    lines = [line for line in log.read_text().splitlines()
             if f"job={job_id} step=0 " in line]  # fmt: skip
    assert sorted(lines) == sorted(
        f"{kind} job={job_id} step=0 node={node} node_tid=0 global_tid={rank} procid={procid}"
        for node, rank in (("node01", 0), ("node02", 1))
        for kind, procid in (("task_prolog", "-"), ("user_task_prolog", rank), ("task_epilog", rank))
    ), lines
