"""The power programs as real processes: not waited on, reaped with their exit code,
output discarded, SLURM_RESUME_FILE readable for its first seconds then removed."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from power.core.programs import Spawner, SpawnError, shutdown_wait_limit


class Ends:
    def __init__(self) -> None:
        self.runs: dict[int, tuple[int, float]] = {}
        self.event = threading.Event()

    def __call__(self, run_id: int, code: int, ended: float) -> None:
        self.runs[run_id] = (code, ended)
        self.event.set()

    def wait(self, run_id: int, timeout: float = 5) -> tuple[int, float]:
        deadline = time.monotonic() + timeout
        while run_id not in self.runs:
            assert time.monotonic() < deadline, f"run {run_id} did not end"
            time.sleep(0.01)
        return self.runs[run_id]


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_a_program_runs_with_its_hostlist_and_is_reaped_with_its_exit_code(tmp_path: Path) -> None:
    ends = Ends()
    spawner = Spawner(ends, cwd=tmp_path)
    prog = script(tmp_path, "resume", 'echo "$* $SLURM_NODE_NAME $(pwd)" > out\necho noise\nexit 4\n')
    start = time.time()
    pid = spawner.spawn(1, [prog, "cloud[1-3]"], env=[("SLURM_NODE_NAME", "x")])
    assert pid > 0
    code, ended = ends.wait(1)
    assert code == 4 and ended >= start
    assert (tmp_path / "out").read_text() == f"cloud[1-3] x {tmp_path}\n"
    assert spawner.running() == []


def test_spawn_does_not_wait_and_shutdown_waits_only_up_to_its_limit(tmp_path: Path) -> None:
    ends = Ends()
    spawner = Spawner(ends)
    slow = script(tmp_path, "slow", "sleep 30\n")
    quick = script(tmp_path, "quick", "sleep 0.3\n")
    t0 = time.monotonic()
    spawner.spawn(1, [slow])
    spawner.spawn(2, [quick])
    assert time.monotonic() - t0 < 1  # the cycle goes on
    assert spawner.running() == [1, 2]
    left = spawner.wait_all(1.0)
    assert left == [1] and 2 in ends.runs  # the quick one finished, the slow one is left running
    assert 0.9 < time.monotonic() - t0 < 5
    spawner.close()
    import os
    import signal

    os.killpg(os.getpgid(spawner._children[1].popen.pid), signal.SIGKILL)  # clean up the test's sleeper
    assert ends.wait(1)[0] == -signal.SIGKILL


def test_the_resume_file_is_readable_first_then_removed(tmp_path: Path) -> None:
    ends = Ends()
    spawner = Spawner(ends, resume_dir=tmp_path / "rf", resume_file_keep=1.0)
    reader = script(
        tmp_path,
        "reader",
        f'cat "$SLURM_RESUME_FILE" > {tmp_path}/copy\necho "$SLURM_RESUME_FILE" > {tmp_path}/path\n',
    )
    spawner.spawn(5, [reader, "cloud1"], resume_file='{"all_nodes_resume": "cloud1", "jobs": []}')
    ends.wait(5)
    assert (tmp_path / "copy").read_text() == '{"all_nodes_resume": "cloud1", "jobs": []}'
    path = Path((tmp_path / "path").read_text().strip())
    assert path.exists() and path.stat().st_mode & 0o077 == 0  # still there: kept for `keep` seconds
    time.sleep(1.3)
    assert not path.exists()


def test_resume_files_go_away_at_shutdown(tmp_path: Path) -> None:
    spawner = Spawner(Ends(), resume_dir=tmp_path / "rf")
    spawner.spawn(1, ["/bin/true"], resume_file="{}")
    assert list((tmp_path / "rf").iterdir())
    spawner.wait_all(2)
    spawner.close()
    assert not list((tmp_path / "rf").iterdir())


def test_a_missing_program_is_a_spawn_error(tmp_path: Path) -> None:
    spawner = Spawner(Ends(), resume_dir=tmp_path)
    with pytest.raises(SpawnError):
        spawner.spawn(1, [str(tmp_path / "missing")], resume_file="{}")
    assert list(tmp_path.iterdir()) == []  # its resume file is not left behind


def test_shutdown_limit_is_ten_seconds_or_the_larger_timeout_if_less() -> None:
    assert shutdown_wait_limit(30, 60) == 10
    assert shutdown_wait_limit(5, 3) == 5
