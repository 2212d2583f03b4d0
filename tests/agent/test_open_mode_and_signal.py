"""sbatch --open-mode and --signal on the agent (#16 point 6): output files opened with
O_APPEND or truncated (a requeued run appends), and the signal sent sig_time seconds
before the time limit to the batch shell alone (B:) or to the job's whole process group;
SLURM_NTASKS_PER_NODE for --ntasks-per-node."""

from __future__ import annotations

from pathlib import Path

from agent import job_signals, paths
from agent.daemon import Agent
from agent.jobs import Account, job_environment
from tests.agent.harness import FakeController, launch_object, run_with_agent


def _run_job(tmp_path: Path, job: dict) -> dict:
    result: dict = {}

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": job})
        await ctl.expect("started", job_id=job["job_id"])
        result.update(await ctl.expect("completed", job_id=job["job_id"], timeout=20))

    run_with_agent(tmp_path, scenario)
    return result


def test_appends_follows_the_open_mode_and_the_run() -> None:
    assert paths.appends({"open_mode": "append", "run": 0})
    assert not paths.appends({"open_mode": None, "run": 0})
    assert paths.appends({"open_mode": None, "run": 2})  # a requeued run keeps the earlier output
    assert not paths.appends({"open_mode": "truncate", "run": 2})


def test_open_mode_append_keeps_the_earlier_output(tmp_path: Path, work: Path) -> None:
    out = work / "log.out"
    out.write_text("first run\n")
    job = launch_object(3, "#!/bin/sh\necho second run\n", work, std_out=str(out), open_mode="append")
    assert _run_job(tmp_path, job)["exit_code"] == 0
    assert out.read_text() == "first run\nsecond run\n"


def test_default_open_mode_truncates(tmp_path: Path, work: Path) -> None:
    out = work / "log.out"
    out.write_text("first run\n")
    job = launch_object(4, "#!/bin/sh\necho second run\n", work, std_out=str(out))
    assert _run_job(tmp_path, job)["exit_code"] == 0
    assert out.read_text() == "second run\n"


def test_signal_delay_from_the_time_limit() -> None:
    assert job_signals.delay({"signal": "B:10@120", "time_limit": 5}) == (180.0, 10, True)
    assert job_signals.delay({"signal": "12@60", "time_limit": 5}) == (240.0, 12, False)
    assert job_signals.delay({"signal": "10@600", "time_limit": 1}) == (0.0, 10, False)
    assert job_signals.delay({"signal": "10@60", "time_limit": None}) is None
    assert job_signals.delay({"signal": None, "time_limit": 5}) is None


# The script's children are started in the background and waited for in short sleeps,
# so the shell runs its trap as soon as the signal comes.
TRAPPING = """#!/bin/bash
sleep 300 &
child=$!
report() {{
  if kill -0 $child 2>/dev/null; then echo "got {sig}, child alive"; else echo "got {sig}, child gone"; fi
  kill $child 2>/dev/null
  exit 0
}}
trap report {sig}
for i in $(seq 1 200); do sleep 0.1; done
echo "no signal"
exit 3
"""


def test_batch_only_signal_reaches_the_script_alone(tmp_path: Path, work: Path) -> None:
    # --time=1 --signal=B:USR1@58: two seconds after the start.
    job = launch_object(5, TRAPPING.format(sig="USR1"), work, time_limit=1, signal="B:10@58")
    done = _run_job(tmp_path, job)
    assert (work / "slurm-5.out").read_text() == "got USR1, child alive\n"
    assert done["exit_code"] == 0


def test_signal_without_b_is_not_sent_to_the_batch_shell(tmp_path: Path, work: Path) -> None:
    """Slurm: "by default all job steps will be signaled, but not the batch shell itself"
    (the steps' agents send it: steps/core/warning.py); the batch script runs on."""
    script = TRAPPING.format(sig="USR2").replace("seq 1 200", "seq 1 40")
    job = launch_object(6, script, work, time_limit=1, signal="12@58")  # due 2 s after the start
    done = _run_job(tmp_path, job)
    assert (work / "slurm-6.out").read_text().splitlines()[-1] == "no signal"
    assert done["exit_code"] == 3


def test_ntasks_per_node_is_in_the_environment() -> None:
    account = Account(name="me")
    job = launch_object(8, "#!/bin/sh\n", Path("/tmp"), ntasks_per_node=2)
    assert job_environment(job, account)["SLURM_NTASKS_PER_NODE"] == "2"
    assert "SLURM_NTASKS_PER_NODE" not in job_environment(
        launch_object(9, "#!/bin/sh\n", Path("/tmp")), account
    )
