"""The payload example of Slurm's hres.html ("hres/lua") end to end (#17 acceptance,
points 2 and 4): the controller's pre-run returns ``token=<jobid>``, the job's launch
carries it to a real agent, whose node job prolog logs it; the script is the page's, with
the functions hres/lua requires besides returning success, and task functions that note
each task they run for (an srun step's tasks too).

In both modes: in distributed mode the passes, so the pre-runs, run in the Celery worker,
which loads the scripts itself (the server processes read the configuration); an
asynchronous pre-run runs there too and its payload reaches the node."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import DEMO_CONF, FSCHED, ROOT, E2ECluster, _modes, make_cluster, started

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
    "hres_node_task_prolog",
    "hres_node_task_epilog",
    "hres_node_user_task_prolog",
]
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


ASYNC = """\
function hres_controller_job_prerun(ctx, job, prep)
return slurm.SUCCESS, "token=" .. job.job_id
end
function hres_controller_job_async_prerun(ctx, job, prep)
local f = io.open("/proc/self/cmdline", "rb")
local cmdline = f:read("a"):gsub("\\0", " ")
f:close()
slurm.log_info("async pre-run of JobId=%d after %s in %s", job.job_id, prep.payload, cmdline)
return slurm.SUCCESS, "async=" .. job.job_id
end
function hres_node_job_prolog(prep, job)
slurm.log_info("JobId=%d payload %s", job.job_id, prep.payload or "")
return slurm.SUCCESS
end
"""

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


def _script(path, text: str) -> str:
    path.write_text(text + "".join(f"function {name}() return slurm.SUCCESS end\n" for name in OTHERS))
    path.chmod(0o644)
    return str(path)


@pytest.fixture(scope="module", params=_modes())
def lua_cluster(request, tmp_path_factory) -> Iterator[E2ECluster]:
    conf = tmp_path_factory.mktemp("hres-lua-conf") / "conf"
    shutil.copytree(DEMO_CONF, conf)
    with (conf / "resources.yaml").open("a") as f:
        qpu = _script(conf / "hres_qpu.lua", EXAMPLE)
        with open(qpu, "a") as lua:  # after the no-op task functions: these win
            lua.write(TASKS.format(log=conf.parent / "tasks.log"))
        f.write(RESOURCE.format(path=qpu))
        f.write(RESOURCE.format(path=_script(conf / "hres_qpa.lua", ASYNC)).replace("qpu", "qpa"))
        gated = ASYNC.replace(
            "local f", f'while not io.open("{conf / "gate"}") do os.execute("sleep 0.2") end\nlocal f'
        )
        f.write(RESOURCE.format(path=_script(conf / "hres_qpw.lua", gated)).replace("qpu", "qpw"))
    c = make_cluster(tmp_path_factory, request.param, conf_dir=conf)
    c.celery_log_level = "info"  # the pre-runs' slurm.log_info lines, in the worker's log
    with started(c, request.param) as c:
        c.mode = request.param
        yield c


def _log(c: E2ECluster, name: str) -> str:
    path = c.state_dir / f"{name}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def test_the_prerun_payload_reaches_the_nodes_job_prolog(lua_cluster, tmp_path):
    c = lua_cluster
    out = c.cli("sbatch", "-p", "debug", "-w", "node02", "-L", "qpu:1", "--wrap", "true", cwd=tmp_path).stdout
    job_id = int(out.split()[-1])
    c.wait_for("the job to complete", lambda: c.jobs(job_id)[job_id]["state"] == "COMPLETED")
    line = f"hres/lua: reserving qpu for JobId={job_id}"
    if c.mode == "distributed":
        # The pass ran in the Celery worker, which loaded the script itself.
        assert line in _log(c, "celery")
        assert line not in _log(c, "server")
    else:
        assert line in _log(c, "server")
    agent = c.state_dir / "agent.log"
    c.wait_for(
        "the node's job prolog to log the payload",
        lambda: f"hres/lua: JobId={job_id} payload token={job_id}" in agent.read_text(errors="replace"),
        timeout=10,
    )


def test_an_asynchronous_prerun_completes_and_its_payload_reaches_the_node(lua_cluster, tmp_path):
    c = lua_cluster
    out = c.cli("sbatch", "-p", "debug", "-w", "node03", "-L", "qpa:1", "--wrap", "true", cwd=tmp_path).stdout
    job_id = int(out.split()[-1])
    c.wait_for("the job to complete", lambda: c.jobs(job_id)[job_id]["state"] == "COMPLETED")
    where = "celery" if c.mode == "distributed" else "server"
    found = [line for line in _log(c, where).splitlines() if f"async pre-run of JobId={job_id} " in line]
    assert found and f"after token={job_id} in " in found[0]
    if c.mode == "distributed":
        assert " worker " in found[0]  # celery -A config worker: the process that ran the pass
    c.wait_for(
        "the node's job prolog to log the asynchronous pre-run's payload",
        lambda: f"hres/lua: JobId={job_id} payload async={job_id}" in _log(c, "agent"),
        timeout=10,
    )


def _start_worker(c: E2ECluster) -> None:
    """A Celery worker in place of the one killed (beat runs on)."""
    celery = str(Path(sys.executable).parent / "celery")
    c.celery[0] = subprocess.Popen(
        [celery, "-A", "config", "worker", "-l", c.celery_log_level, "-c", "2", "-P", "threads"],
        env=c.env,
        cwd=ROOT,
        stdout=c._out("celery"),
        stderr=subprocess.STDOUT,
    )


def test_an_asynchronous_prerun_is_recovered_only_once_its_worker_is_gone(lua_cluster, tmp_path):
    """Distributed mode: a server process that starts recovers the lost asynchronous
    pre-runs, but not one alive in a Celery worker; once that worker is killed, the next
    start requeues the job, which then runs."""
    c = lua_cluster
    if c.mode != "distributed":
        pytest.skip("several processes: distributed mode")
    out = c.cli("sbatch", "-p", "debug", "-w", "node01", "-L", "qpw:1", "--wrap", "true", cwd=tmp_path).stdout
    job_id = int(out.split()[-1])
    c.wait_for("the job to wait for its pre-run", lambda: c.jobs(job_id)[job_id]["state"] == "CONFIGURING")
    c._stop(c.server)
    c.start_server()  # its start recovers: the worker holds its lock, the job is left alone
    # Its other server process may answer a moment later: what must not happen is given time.
    time.sleep(2)
    job = c.jobs(job_id)[job_id]
    assert (job["state"], job["restart_count"]) == ("CONFIGURING", 0)
    c.celery[0].kill()  # the worker running it: its connection, and its lock, go
    c.celery[0].wait()
    (c.conf_dir / "gate").touch()
    c._stop(c.server)
    c.start_server()
    _start_worker(c)
    c.wait_for(
        "the job to complete after its requeue", lambda: c.jobs(job_id)[job_id]["state"] == "COMPLETED"
    )
    assert c.jobs(job_id)[job_id]["restart_count"] == 1
    c.wait_for(
        "the node's job prolog to log the new run's payload",
        lambda: f"hres/lua: JobId={job_id} payload async={job_id}" in _log(c, "agent"),
        timeout=10,
    )


def test_a_resource_added_by_a_reconfigure_has_its_prerun_where_the_pass_runs(lua_cluster, tmp_path):
    """Last in the module: it changes the configuration.  In distributed mode a server
    process reads it; the Celery worker notices the new version and loads the new script."""
    c = lua_cluster
    text = EXAMPLE.replace("reserving", "newly reserving")
    with (c.conf_dir / "resources.yaml").open("a") as f:
        f.write(RESOURCE.format(path=_script(c.conf_dir / "hres_qpn.lua", text)).replace("qpu", "qpn"))
    c.cli("scontrol", "reconfigure")
    out = c.cli("sbatch", "-p", "debug", "-w", "node04", "-L", "qpn:1", "--wrap", "true", cwd=tmp_path).stdout
    job_id = int(out.split()[-1])
    c.wait_for("the job to complete", lambda: c.jobs(job_id)[job_id]["state"] == "COMPLETED")
    assert f"hres/lua: newly reserving qpn for JobId={job_id}" in _log(
        c, "celery" if c.mode == "distributed" else "server"
    )
    c.wait_for(
        "the node's job prolog to log the payload",
        lambda: f"hres/lua: JobId={job_id} payload token={job_id}" in _log(c, "agent"),
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
