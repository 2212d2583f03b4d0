"""Prolog, Epilog and TaskProlog end to end (#16 point 3): a real controller, the real agent
and CLI, and a slurm.conf naming small scripts written by the test. Each script acts by
the node it runs on, so one cluster shows every case: the Prolog fails on node03, node06
and node07, the Epilog fails on node04 and is slow on node05. PrologFlags=Alloc: a
multi-node job's other nodes run the Prolog before its launch.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import DEMO_CONF, E2ECluster, make_cluster, started

pytestmark = pytest.mark.e2e

# No search path is set for them (Slurm's Prolog and Epilog Guide): full paths only.
PROLOG = """#!/bin/bash
echo "$SLURM_JOB_ID $SLURM_JOB_USER $SLURM_SCRIPT_CONTEXT $SLURMD_NODENAME" >> {log}
case "$SLURMD_NODENAME" in node03|node06|node07) exit 1;; esac
exit 0
"""
EPILOG = """#!/bin/bash
case "$SLURMD_NODENAME" in
  node04) exit 1;;
  node05) /bin/sleep 4;;
esac
exit 0
"""
TASK_PROLOG = """#!/bin/bash
echo "export FOO=bar"
echo "print from the task prolog"
"""


@pytest.fixture(scope="module")
def prolog_cluster(tmp_path_factory) -> Iterator[tuple[E2ECluster, Path]]:
    conf = tmp_path_factory.mktemp("prolog-conf") / "conf"
    shutil.copytree(DEMO_CONF, conf)
    log = conf / "prolog.log"
    for name, text in (("prolog", PROLOG.format(log=log)), ("epilog", EPILOG), ("task_prolog", TASK_PROLOG)):
        (conf / name).write_text(text)
        (conf / name).chmod(0o755)
    with open(conf / "slurm.conf", "a") as f:
        f.write(f"Prolog={conf / 'prolog'}\nEpilog={conf / 'epilog'}\nTaskProlog={conf / 'task_prolog'}\n")
        f.write("PrologFlags=Alloc\nPrologEpilogTimeout=30\n")
    with started(make_cluster(tmp_path_factory, "embedded", conf_dir=conf)) as c:
        yield c, log


def submit(c: E2ECluster, *args: str, cwd: Path | None = None) -> int:
    return int(c.cli("sbatch", "--parsable", *args, cwd=cwd).stdout.strip().split(";")[0])


def node_reason(c: E2ECluster, node: str) -> tuple[str, str]:
    out = c.cli("sinfo", "-h", "-N", "-n", node, "-o", "%t|%E").stdout.strip()
    state, _, reason = out.partition("|")
    return state, reason


def squeue(c: E2ECluster, job: int, fmt: str) -> str:
    return c.cli("squeue", "-h", "-t", "all", "-j", str(job), "-o", fmt).stdout.strip()


def test_a_failing_prolog_drains_the_node_and_requeues_the_job_held(prolog_cluster) -> None:
    c, log = prolog_cluster
    job = submit(c, "-w", "node03", "--wrap", "true")
    c.wait_for("node03 drained", lambda: node_reason(c, "node03")[0] == "drain", timeout=60)
    assert node_reason(c, "node03")[1] == "Prolog error"
    c.wait_for("the job back in the queue", lambda: squeue(c, job, "%T") == "PENDING")
    assert squeue(c, job, "%r") == "launch failed requeued held"
    assert squeue(c, job, "%Q") == "0"
    assert f"{job} " in log.read_text()
    assert "prolog_slurmd" in log.read_text()


def test_a_failing_prolog_cancels_a_job_that_may_not_be_requeued(prolog_cluster) -> None:
    c, _ = prolog_cluster
    job = submit(c, "-w", "node06", "--no-requeue", "--wrap", "true")
    c.wait_for("the job cancelled", lambda: squeue(c, job, "%T") == "CANCELLED", timeout=60)
    assert node_reason(c, "node06") == ("drain", "Prolog error")


def test_a_failing_epilog_drains_the_node(prolog_cluster) -> None:
    c, _ = prolog_cluster
    job = submit(c, "-w", "node04", "--wrap", "true")
    c.wait_for("the job completed", lambda: squeue(c, job, "%T") == "COMPLETED", timeout=60)
    c.wait_for("node04 drained", lambda: node_reason(c, "node04")[0] in ("drain", "drng"))
    assert node_reason(c, "node04")[1] == "Epilog error"


def test_task_prolog_export_and_print_reach_the_job(prolog_cluster, tmp_path: Path) -> None:
    c, _ = prolog_cluster
    out = tmp_path / "out.txt"
    job = submit(c, "-w", "node01", "-o", str(out), "--wrap", 'echo "FOO=$FOO"', cwd=tmp_path)
    c.wait_for("the job completed", lambda: squeue(c, job, "%T") == "COMPLETED", timeout=60)
    assert out.read_text().splitlines() == ["from the task prolog", "FOO=bar"]


def test_the_job_is_completing_while_its_epilog_runs(prolog_cluster) -> None:
    c, _ = prolog_cluster
    job = submit(c, "-w", "node05", "--wrap", "true")
    c.wait_for("the job completing", lambda: squeue(c, job, "%t") == "CG", timeout=60, interval=0.1)
    # Its CPUs stay allocated to it until the epilog is done, the node COMPLETING.
    assert node_reason(c, "node05")[0] == "comp"
    shown = c.cli("scontrol", "show", "node", "node05").stdout
    assert "State=IDLE+COMPLETING " in shown
    c.wait_for("the job completed", lambda: squeue(c, job, "%t") == "CD", timeout=60)
    c.wait_for("node05 idle again", lambda: node_reason(c, "node05")[0] == "idle")


def test_a_two_node_job_is_completing_until_both_nodes_epilogs_are_done(prolog_cluster) -> None:
    c, _ = prolog_cluster
    # node02 (the batch host) has a quick Epilog, node05 a slow one.
    job = submit(c, "-N", "2", "-w", "node02,node05", "--wrap", "true")
    c.wait_for("the job completing", lambda: squeue(c, job, "%t") == "CG", timeout=60, interval=0.1)
    # node02's Epilog is done: it is released while the job waits for node05's.
    c.wait_for("node02 released", lambda: node_reason(c, "node02")[0] == "idle", interval=0.1)
    assert squeue(c, job, "%t") == "CG"
    assert node_reason(c, "node05")[0] == "comp"
    c.wait_for("the job completed", lambda: squeue(c, job, "%t") == "CD", timeout=60)
    assert node_reason(c, "node05")[0] == "idle"


def prolog_nodes(log: Path, job: int) -> list[str]:
    """The nodes whose Prolog logged this job."""
    return sorted(line.split()[-1] for line in log.read_text().splitlines() if line.startswith(f"{job} "))


def test_with_alloc_a_two_node_job_runs_the_prolog_on_both_nodes(prolog_cluster) -> None:
    c, log = prolog_cluster
    job = submit(c, "-N", "2", "-w", "node01,node02", "--wrap", "true")
    c.wait_for("the job completed", lambda: squeue(c, job, "%T") == "COMPLETED", timeout=60)
    assert prolog_nodes(log, job) == ["node01", "node02"]


def test_with_alloc_a_failing_prolog_on_a_second_node_drains_it_and_requeues_the_job(prolog_cluster) -> None:
    c, log = prolog_cluster
    job = submit(c, "-N", "2", "-w", "node01,node07", "--wrap", "true")
    c.wait_for("node07 drained", lambda: node_reason(c, "node07")[0] == "drain", timeout=60)
    assert node_reason(c, "node07")[1] == "Prolog error"
    c.wait_for("the job back in the queue", lambda: squeue(c, job, "%T") == "PENDING")
    assert squeue(c, job, "%r") == "launch failed requeued held"
    # The batch host never ran the job, nor its own Prolog, and was not drained.
    assert node_reason(c, "node01")[0] != "drain"
    assert prolog_nodes(log, job) == ["node07"]
