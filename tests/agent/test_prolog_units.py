"""slurm.conf's Prolog/Epilog keys (cluster/core/prolog_conf.py, checked by the slurm.conf
reader with file:line) and the pure parts of agent/prolog.py: TaskProlog's output, the
Prolog's and Epilog's environment."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from agent.prolog import Stage, TaskEdits, node_environment, parse_task_output
from cluster.core.prolog_conf import PrologConfig, prolog_config
from cluster.core.slurmconf import ConfigError, parse_slurm_conf_text

HEAD = "ClusterName=test\nSlurmctldHost=ctl\n"


def _errors(body: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_slurm_conf_text(HEAD + body)
    return [str(p) for p in info.value.problems]


def test_the_keys_are_read_with_slurms_defaults_and_overrides() -> None:
    conf = parse_slurm_conf_text(
        HEAD + "Prolog=/etc/slurm/prolog.sh,/etc/slurm/prolog.d/*\nEpilog=/etc/slurm/epilog\n"
        "TaskProlog=/etc/slurm/tp\nTaskEpilog=/etc/slurm/te\nPrologFlags=contain,Serial\n"
        "PrologEpilogTimeout=120\nEpilogTimeout=30\n"
    )
    pc = prolog_config(conf.options)
    assert pc.prolog == ("/etc/slurm/prolog.sh", "/etc/slurm/prolog.d/*")
    assert pc.epilog == ("/etc/slurm/epilog",)
    assert (pc.task_prolog, pc.task_epilog) == (("/etc/slurm/tp",), ("/etc/slurm/te",))
    # Contain implies Alloc (slurm.conf(5)); the names are case-insensitive.
    assert pc.flags == {"Contain", "Alloc", "Serial"}
    # EpilogTimeout overrides PrologEpilogTimeout, which PrologTimeout then takes.
    assert (pc.prolog_timeout, pc.epilog_timeout) == (120, 30)
    assert prolog_config({}) == PrologConfig()  # none set: nothing runs, no timeout
    assert prolog_config({"PrologFlags": "ForceRequeueOnFail,NoHold"}).flags == {
        "ForceRequeueOnFail", "Alloc", "NoHold"
    }  # fmt: skip
    assert prolog_config({"PrologEpilogTimeout": "INFINITE"}).prolog_timeout is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("Prolog=prolog.sh", "slurm.conf:3: Prolog=prolog.sh: prolog.sh: must be an absolute path"),
        ("TaskProlog=/a,rel", "slurm.conf:3: TaskProlog=/a,rel: rel: must be an absolute path"),
        ("PrologFlags=Alloc,Bogus", "slurm.conf:3: PrologFlags=Alloc,Bogus: invalid PrologFlags value Bogus"),
        ("PrologFlags=X11", "slurm.conf:3: PrologFlags=X11: X11: not supported by fsched"),
        ("PrologFlags=RunInJob", "slurm.conf:3: PrologFlags=RunInJob: RunInJob: not supported by fsched"),
        ("PrologFlags=NoHold,Contain", "slurm.conf:3: PrologFlags=NoHold,Contain: NoHold cannot be combined"),
        ("PrologTimeout=soon", "slurm.conf:3: PrologTimeout=soon: not a number of seconds"),
        ("EpilogTimeout=0", "slurm.conf:3: EpilogTimeout=0: must be from 1 to 65533 seconds"),
        ("PrologEpilogTimeout=-5", "slurm.conf:3: PrologEpilogTimeout=-5: not a number of seconds"),
    ],
)
def test_bad_values_are_errors_naming_file_and_line(line: str, message: str) -> None:
    found = _errors(line + "\n")
    assert len(found) == 1
    assert found[0].startswith(message), found


def test_task_prolog_output_is_read_as_slurmstepd_reads_it() -> None:
    edits = parse_task_output(
        "export A=1\n  export B=x=y z\nunset C\nprint hello  world\nexport 9BAD=1\nexport NOEQ\n"
        "printx no\nsomething else\nprint \n"
    )
    assert edits.env == {"A": "1", "B": "x=y z", "C": None}
    assert edits.printed == ["hello  world", ""]
    env = {"C": "gone", "D": "kept"}
    edits.apply(env)
    assert env == {"D": "kept", "A": "1", "B": "x=y z"}


def test_print_lines_are_written_to_the_jobs_output(tmp_path) -> None:
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        TaskEdits(printed=["one", "two"]).write(fd)
    finally:
        os.close(fd)
    assert path.read_text() == "one\ntwo\n"


def test_prolog_and_epilog_environment() -> None:
    me = pwd.getpwuid(os.geteuid()).pw_name
    job = {
        "job_id": 5, "user": me, "node_list": "n[1-2]", "num_nodes": 2, "partition": "p", "account": "a",
        "name": "nm", "work_dir": "/tmp", "run": 1, "std_out": "/tmp/o", "std_err": None, "std_in": None,
        "environment": {"SECRET": "not for root's prolog"},
    }  # fmt: skip
    env = node_environment(job, Stage.PROLOG, job_id=5, node="n1", cluster="c", conf="/etc/slurm/slurm.conf")
    assert env["SLURM_JOB_ID"] == env["SLURM_JOBID"] == "5"
    assert env["SLURM_JOB_USER"] == me
    assert env["SLURM_JOB_UID"] == str(os.geteuid())
    assert env["SLURM_JOB_NODELIST"] == "n[1-2]"
    assert (env["SLURM_JOB_PARTITION"], env["SLURM_JOB_ACCOUNT"]) == ("p", "a")
    assert env["SLURM_CLUSTER_NAME"] == "c"
    assert env["SLURM_SCRIPT_CONTEXT"] == "prolog_slurmd"
    assert env["SLURM_JOB_RESTART_COUNT"] == "1"
    assert env["SLURM_JOB_STDERR"] == "/tmp/o"  # no --error: the output file
    assert env["SLURM_CONF"] == "/etc/slurm/slurm.conf"
    assert "SECRET" not in env and "PATH" not in env
    assert "SLURM_JOB_EXIT_CODE" not in env
    epi = node_environment(job, Stage.EPILOG, job_id=5, node="n1", exit_code=2, signal_no=0)
    assert (epi["SLURM_JOB_EXIT_CODE"], epi["SLURM_JOB_EXIT_CODE2"]) == ("512", "2:0")
    killed = node_environment(job, Stage.EPILOG, job_id=5, node="n1", exit_code=0, signal_no=9)
    assert (killed["SLURM_JOB_EXIT_CODE"], killed["SLURM_JOB_EXIT_CODE2"]) == ("9", "0:9")
    # After an agent restart the launch object is gone: the ids it still knows.
    assert node_environment(None, Stage.EPILOG, job_id=5, node="n1") == {
        "SLURM_JOB_ID": "5", "SLURM_JOBID": "5", "SLURMD_NODENAME": "n1",
        "SLURM_SCRIPT_CONTEXT": "epilog_slurmd",
    }  # fmt: skip


def test_a_task_prologs_output_is_read_to_its_end_even_when_it_comes_in_pieces(tmp_path) -> None:
    import asyncio

    from agent.prolog import HookCall, run_program

    script = tmp_path / "tp"
    script.write_text("#!/bin/bash\necho 'export A=1'\n/bin/sleep 0.3\necho 'print later'\n")
    script.chmod(0o755)
    result = asyncio.run(run_program(str(script), HookCall(Stage.TASK_PROLOG, 1, "n1", {}), capture=True))
    assert result.ok
    assert result.output == "export A=1\nprint later\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_a_task_script_enters_the_work_dir_as_the_job_user_not_as_root(tmp_path) -> None:
    import asyncio
    import shutil
    import tempfile

    from agent.prolog import HookCall, RunAs, run_program

    nobody = pwd.getpwnam("nobody")
    shared = Path(tempfile.mkdtemp(prefix="fsched-tp-"))
    try:
        shared.chmod(0o755)
        script = shared / "tp"
        script.write_text("#!/bin/bash\necho \"print $(pwd) $(id -u)\"\n")
        script.chmod(0o755)
        secret = tmp_path / "root-only"
        secret.mkdir(mode=0o700)
        call = HookCall(Stage.TASK_PROLOG, 1, "n1", {}, cwd=str(secret),
                        run_as=RunAs(nobody.pw_uid, nobody.pw_gid, ()))  # fmt: skip
        result = asyncio.run(run_program(str(script), call, capture=True))
        # A chdir made as root before the switch would have put it in the root-only directory.
        assert result.output == f"print /tmp {nobody.pw_uid}\n"
        open_dir = shared / "work"
        open_dir.mkdir(mode=0o755)
        call.cwd = str(open_dir)
        assert asyncio.run(run_program(str(script), call, capture=True)).output == (
            f"print {open_dir} {nobody.pw_uid}\n"
        )
    finally:
        shutil.rmtree(shared)
