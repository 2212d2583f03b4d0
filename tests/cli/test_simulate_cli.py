"""``fsched simulate`` (#18 point 1): the CLI runs the simulator as a process of its own,
with an argument list, and says when it is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_configuration_is_named_by_the_simulator_process(tmp_path, capfd):
    code = main(
        ["fsched", "simulate", "--conf", str(tmp_path / "nowhere"), "--workload", str(tmp_path / "w.swf"),
         "--out", str(tmp_path / "out")]
    )  # fmt: skip
    assert code == 1
    # The message comes from `python -m simulator run` (the child's stderr is this test's).
    missing = tmp_path / "nowhere" / "slurm.conf"
    assert f"fsched simulate: error: --conf: {missing}: no such file" in capfd.readouterr().err


def test_a_workload_or_the_history_is_required(tmp_path, capsys):
    assert main(["fsched", "simulate", "--conf", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "one of --workload or --from-history is required" in capsys.readouterr().err


def test_until_must_be_positive(tmp_path, capsys):
    args = ["fsched", "simulate", "--conf", str(tmp_path), "--workload", "w", "--out", str(tmp_path)]
    assert main([*args, "--until", "-5"]) == 1
    assert "--until: must be a positive number of seconds" in capsys.readouterr().err


def test_a_client_only_host_is_told_the_simulator_is_not_installed(tmp_path):
    # A host with the CLI alone: only cli/ on the path, no site-packages (no Django).
    (tmp_path / "cli").symlink_to(ROOT / "cli")
    run = subprocess.run(
        [sys.executable, "-S", "-c", "import sys; from cli.main import main; sys.exit(main())", "simulate",
         "--conf", "c", "--workload", "w", "--out", "o"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.startswith("fsched simulate: error: the simulator is not installed on this host")
