"""The payload example of Slurm's hres.html ("hres/lua") end to end (#17 acceptance,
points 2 and 4): the controller's pre-run returns ``token=<jobid>``, the job's launch
carries it to a real agent, whose node job prolog logs it; the script is the page's, with
the functions hres/lua requires besides returning success."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.e2e.harness import DEMO_CONF, E2ECluster, make_cluster, started

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


# Embedded mode only: in distributed mode the scripts are loaded by the server process
# that read the configuration, not by the Celery workers whose passes run the pre-runs
# (docs/lua.md, "Distributed mode").
@pytest.fixture(scope="module", params=["embedded"])
def lua_cluster(request, tmp_path_factory) -> Iterator[E2ECluster]:
    conf = tmp_path_factory.mktemp("hres-lua-conf") / "conf"
    shutil.copytree(DEMO_CONF, conf)
    script = conf / "hres_qpu.lua"
    script.write_text(EXAMPLE + "".join(f"function {name}() return slurm.SUCCESS end\n" for name in OTHERS))
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
