"""srun's own side (cli/srun.py, cli/step_output.py): options refused rather than ignored,
labels and exit statuses as Slurm's srun prints them."""

from __future__ import annotations

import fcntl
import io
import os
import signal
import struct
import termios

import pytest

from cli import srun, step_output, step_run


def test_an_unknown_option_is_refused_naming_it(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        srun.build_parser().parse_args(["--bogus", "hostname"])
    assert stopped.value.code == 1
    assert "srun: unrecognized option '--bogus'" in capsys.readouterr().err


def test_the_command_keeps_its_own_options() -> None:
    ns = srun.build_parser().parse_args(["-n", "4", "-l", "-K", "--overlap", "--mpi=none", "hostname", "-f"])
    assert (ns.ntasks, ns.label, ns.kill_on_bad_exit, ns.overlap, ns.mpi) == (4, True, "1", True, "none")
    assert ns.command == ["hostname", "-f"]
    assert srun.build_parser().parse_args(["-u", "-c", "2", "-J", "x", "true"]).cpus_per_task == 2
    # "--" ends srun's options, as getopt's: the command is what follows it.
    assert srun.parse(["-n", "2", "--", "bash", "-l"]).command == ["bash", "-l"]
    assert srun.parse(["--pty", "--", "bash"]).command == ["bash"]


def test_exclusive_with_overlap_and_no_command_are_refused(capsys, monkeypatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "1")
    assert srun.main(["--exclusive", "--overlap", "true"]) == 1
    assert srun.main(["-n", "2"]) == 1
    err = capsys.readouterr().err
    assert "mutually exclusive" in err and "srun: fatal: No command given to execute." in err


def test_pmix_is_refused_as_slurm_refuses_a_missing_mpi_plugin(capsys) -> None:
    assert step_run.run_step(None, 1, {"mpi": "pmix"}, ["true"]) == 1
    assert "invalid MPI type 'pmix'" in capsys.readouterr().err


def test_labels_prefix_whole_lines_and_wait_for_the_end_of_a_partial_one() -> None:
    out, err = io.BytesIO(), io.BytesIO()
    o = step_output.TaskOutput(out, err, ntasks=12, label=True)
    o.write(3, b"par", err=False)
    o.write(11, b"x\ny\n", err=False)
    o.write(3, b"tial\nnext", err=False)
    o.write(3, b"oops\n", err=True)
    o.task_ended(3)
    assert out.getvalue() == b"11: x\n11: y\n 3: partial\n 3: next\n"
    assert err.getvalue() == b" 3: oops\n"
    plain = io.BytesIO()
    step_output.TaskOutput(plain, err, ntasks=2, label=False).write(0, b"as is", err=False)
    assert plain.getvalue() == b"as is"


def test_srun_exits_with_the_highest_task_status_a_signal_as_128_plus_it() -> None:
    assert step_output.exit_status([(0, 0), (3, 0), (1, 0)]) == 3
    assert step_output.exit_status([(0, 0), (0, signal.SIGKILL)]) == 137
    assert step_output.exit_status([]) == 0


def test_exit_reports_and_ctrl_c_status_are_grouped_as_srun_prints_them() -> None:
    lines = step_output.exit_report({"node01": {0: (0, 0), 1: (3, 0)}, "node02": {2: (3, 0), 3: (3, 0)}})
    assert lines == [
        "srun: error: node01: task 1: Exited with exit code 3",
        "srun: error: node02: tasks 2-3: Exited with exit code 3",
    ]
    assert step_output.exit_report({"n": {0: (0, 9)}}) == ["srun: error: n: task 0: Killed"]
    assert step_output.status_lines("7.0", 4, {1: (0, 0)}) == [
        "srun: StepId=7.0 tasks 0,2-3: running",
        "srun: StepId=7.0 task 1: exited",
    ]


def test_stream_modes_as_srun_reads_them() -> None:
    assert step_run.stream_target({"output": "all"}, "output") is None
    assert step_run.stream_target({"error": "none"}, "error") == "/dev/null"
    assert step_run.stream_target({"input": "in-%t"}, "input") == "in-%t"
    with pytest.raises(step_run.CliError, match="one task's stream"):
        step_run.stream_target({"output": "3"}, "output")


def test_inside_a_batch_job_the_counts_default_to_the_job_s_as_slurm_s_srun_reads_them() -> None:
    job_env = {"SLURM_NTASKS": "4", "SLURM_NNODES": "2", "SRUN_CPUS_PER_TASK": "2"}
    assert step_run.shape({}, job_env) == {
        "ntasks": 4,
        "nodes": 2,
        "ntasks_per_node": None,
        "cpus_per_task": 2,
    }
    # The command line wins; nodes inherited never outnumber the tasks.
    assert step_run.shape({"ntasks": 1}, job_env)["nodes"] == 1
    assert step_run.shape({"ntasks": 1, "nodes": "2"}, job_env)["nodes"] == 2
    assert step_run.shape({}, {}) == {
        "ntasks": None,
        "nodes": None,
        "ntasks_per_node": None,
        "cpus_per_task": None,
    }


def test_pty_as_srun_reads_it(capsys, monkeypatch) -> None:
    parse = srun.build_parser().parse_args
    given = [parse(argv).pty for argv in (["--pty", "bash"], ["--pty=3", "bash"], ["bash"])]
    assert given == ["", "3", None]
    monkeypatch.setenv("SLURM_JOB_ID", "1")
    assert srun.main(["--pty", "-o", "out", "bash"]) == 1
    assert srun.main(["--pty=x", "bash"]) == 1
    err = capsys.readouterr().err
    assert "srun: error: --error/--input/--output are incompatible with --pty\n" in err
    assert "srun: fatal: --pty=x must be numeric file descriptor\n" in err
    # Not a terminal: srun says so and runs the step without one.
    reader, writer = os.pipe()
    try:
        assert step_run.terminal({"pty": str(reader)}) is None
    finally:
        os.close(reader)
        os.close(writer)
    said = f"srun: error: Not using a pseudo-terminal, disregarding --pty={reader} option\n"
    assert capsys.readouterr().err == said


def test_the_step_asks_for_a_terminal_of_srun_s_size() -> None:
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        assert step_run.terminal({"pty": str(slave)}) == slave
        body = step_run.step_request({}, ["bash"], "127.0.0.1", 1, "k", pty_fd=slave)
    finally:
        os.close(master)
        os.close(slave)
    assert (body["pty"], body["pty_rows"], body["pty_cols"]) == (True, 30, 100)
    env = body["environment"]
    assert (env["SLURM_PTY_WIN_ROW"], env["SLURM_PTY_WIN_COL"]) == ("30", "100")
    assert "pty" not in step_run.step_request({}, ["bash"], "127.0.0.1", 1, "k")


def test_preserve_env_and_the_hidden_interactive_reach_the_step_request(capsys) -> None:
    ns = srun.parse(["-E", "--interactive", "--pty", "bash"])
    assert (ns.preserve_env, ns.interactive, ns.command) == (True, True, ["bash"])
    assert srun.parse(["--preserve-env", "true"]).preserve_env is True
    body = step_run.step_request(ns, ns.command, "127.0.0.1", 1, "k", environ={"SLURM_NNODES": "2"})
    assert (body["interactive"], body["preserve_env"], body["nodes"]) == (True, True, 2)
    assert body["environment"] == {"SLURM_NNODES": "2"}  # the environment given, not this process's
    plain = step_run.step_request(srun.parse(["true"]), ["true"], "127.0.0.1", 1, "k")
    assert (plain["interactive"], plain["preserve_env"]) == (False, False)
    # --interactive is InteractiveStepOptions' own: srun's --help does not list it (srun.1).
    with pytest.raises(SystemExit):
        srun.build_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    assert "-E, --preserve-env" in out and "--interactive" not in out


def test_srun_names_the_interactive_step_as_slurm_writes_it():
    # log_build_step_id_str writes SLURM_INTERACTIVE_STEP as "interactive": srun's lines
    # (Terminating StepId=..., Ctrl-C, launch failures) name it so.
    from cli.step_run import Session
    from slurmwords.step_ids import INTERACTIVE_STEP

    nodes = [{"name": "node01", "tasks": [0]}]
    session = Session(None, 12, {"step_id": INTERACTIVE_STEP, "num_tasks": 1, "nodes": nodes}, "k", {})
    assert session.name == "12.interactive"
    assert Session(None, 12, {"step_id": 3, "num_tasks": 1, "nodes": nodes}, "k", {}).name == "12.3"


def test_srun_export_builds_the_tasks_environment_as_srun_does():
    from cli.step_run import exported_environment

    env = {"PATH": "/bin", "EDITOR": "vi", "SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1", "HOME": "/h"}
    assert exported_environment({}, env) == env  # ALL, srun's default
    assert exported_environment({"export": "NONE"}, env) == {"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1"}
    assert exported_environment({"export": "EDITOR,ARG1=test"}, env) == {
        "EDITOR": "vi", "ARG1": "test", "SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1"
    }  # fmt: skip
    # NONE ends the list: "User can not specify explicit environment variables with NONE".
    assert "FOO" not in exported_environment({"export": "NONE,FOO=bar"}, env)
    # ALL: everything, the caller's value over the one given.
    assert exported_environment({"export": "ALL,EDITOR=emacs,X=1"}, env) == {**env, "X": "1"}
    # A batch job's sbatch --export reaches its steps through SLURM_EXPORT_ENV;
    # SRUN_EXPORT_ENV overrides it, and the command line both.
    batch = {**env, "SLURM_EXPORT_ENV": "NONE"}
    assert "PATH" not in exported_environment({}, batch)
    assert "PATH" in exported_environment({}, {**batch, "SRUN_EXPORT_ENV": "ALL"})
    assert exported_environment({"export": "HOME"}, batch)["HOME"] == "/h"


def test_sbatch_export_reaches_the_steps_through_slurm_export_env():
    from cli import sbatch

    def environment(export: str | None, environ: dict) -> dict:
        opts = {"export": export} if export else {}
        return sbatch.build_request(opts, script="#!/bin/sh\n", script_name="s", script_args=[],
                                    environ=environ, cwd="/tmp")["environment"]  # fmt: skip

    assert environment("NONE", {"PATH": "/bin"})["SLURM_EXPORT_ENV"] == "NONE"
    assert "PATH" not in environment("NONE", {"PATH": "/bin"})
    assert environment("EDITOR", {"EDITOR": "vi"})["SLURM_EXPORT_ENV"] == "EDITOR"
    assert "SLURM_EXPORT_ENV" not in environment("ALL", {"PATH": "/bin"})
    assert "SLURM_EXPORT_ENV" not in environment(None, {"PATH": "/bin"})
    assert environment("NONE", {"SLURM_EXPORT_ENV": "ALL"})["SLURM_EXPORT_ENV"] == "ALL"  # setenv(..., 0)


def test_srun_takes_wait_and_exact():
    from cli import srun

    ns = srun.parse(["--exact", "-W", "5", "true"])
    assert (ns.exact, ns.max_wait, ns.command) == (True, 5, ["true"])
    assert srun.refusal(srun.parse(["--wait=-1", "true"])) == "srun: error: Invalid --wait specification: -1"


def _interrupts(opts: dict, times: list[float], capsys) -> tuple[list[str], list[tuple[str, str]]]:
    """srun's Ctrl-C handler at those instants: what it says and asks of the controller."""
    import asyncio
    import threading

    from cli.step_run import Session

    nodes = [{"name": "node01", "tasks": [0]}]
    session = Session(None, 12, {"step_id": 0, "num_tasks": 1, "nodes": nodes}, "k", opts)
    asked: list[tuple[str, str]] = []

    async def signal(name: str) -> None:
        asked.append(("signal", name))

    async def cancel(first: str | None = None) -> None:
        asked.append(("cancel", first or ""))

    session._signal, session._cancel = signal, cancel

    async def scenario() -> None:
        for now in times:
            session._interrupt(now)
        await asyncio.gather(*session._tasks)

    # Its own thread and loop: an event loop some earlier test left running in this
    # thread would refuse asyncio.run here.
    worker = threading.Thread(target=asyncio.run, args=(scenario(),))
    worker.start()
    worker.join(20)
    return capsys.readouterr().err.splitlines(), asked


def test_ctrl_c_as_srun_s_options_say(capsys):
    said, asked = _interrupts({}, [100.0], capsys)  # the first prints the states only
    assert said == ["srun: interrupt (one more within 1 sec to abort)", "srun: StepId=12.0 task 0: running"]
    assert asked == []
    said, asked = _interrupts({"quit_on_interrupt": True}, [100.0], capsys)
    assert said == ["srun: sending Ctrl-C to StepId=12.0", "srun: forcing job termination"]
    assert asked == [("cancel", "INT")]
    said, asked = _interrupts({"disable_status": True}, [100.0, 105.0], capsys)
    assert said == ["srun: sending Ctrl-C to StepId=12.0"] * 2 and asked == [("signal", "INT")] * 2
    said, asked = _interrupts({"disable_status": True}, [100.0, 100.5], capsys)  # two in a second abort
    assert asked == [("signal", "INT"), ("cancel", "INT")]


def test_kill_on_bad_exit_takes_0_or_1():
    from cli import srun
    from cli.step_run import Session

    nodes = [{"name": "node01", "tasks": [0]}]
    step = {"step_id": 0, "num_tasks": 1, "nodes": nodes}
    for argv, kills in ((["-K"], True), (["-K1"], True), (["-K0"], False), ([], False), (["-lK"], True)):
        ns = srun.parse([*argv, "true"])
        assert ns.command == ["true"], argv  # never the next word as -K's value
        assert Session(None, 1, step, "k", ns).kill_on_bad_exit is kills, argv
