"""sbatch: #SBATCH parsing, option precedence, the request body, argument errors."""

from __future__ import annotations

import os
import uuid

import pytest

from cli import sbatch
from cli.main import main
from tests.cli.breaking_server import CLOSE, RESET, RESTART, UNKNOWN, BreakingServer

SCRIPT = """#!/bin/bash
# a comment
#SBATCH -J myjob --partition=batch
#SBATCH --time=1:00:00   # a trailing comment
#SBATCH --output="/tmp/out file %j.log"

#SBATCH -N 2-4
echo hello
#SBATCH -p ignored-after-the-first-command
"""


def test_directives_stop_at_the_first_command():
    words = sbatch.script_directives(SCRIPT)
    assert words == [
        "-J",
        "myjob",
        "--partition=batch",
        "--time=1:00:00",
        "--output=/tmp/out file %j.log",
        "-N",
        "2-4",
    ]


def test_directive_prefix_must_start_the_line_and_be_followed_by_space():
    text = "#!/bin/sh\n  #SBATCH -p a\n#SBATCHX -p b\n##SBATCH -p c\n#SBATCH\t-p d\nrun\n"
    assert sbatch.script_directives(text) == ["-p", "d"]


def _opts(*cli: str, script: str | None = None, env: dict | None = None) -> dict:
    parser = sbatch.build_parser()
    ns = parser.parse_args(list(cli))
    script_ns = parser.parse_args(sbatch.script_directives(script)) if script else None
    script_opts = sbatch._namespace_dict(script_ns) if script_ns else {}
    return sbatch.merge_options(sbatch._namespace_dict(ns), sbatch.env_options(env or {}), script_opts)


def test_command_line_beats_environment_beats_script():
    opts = _opts("-p", "debug", script=SCRIPT, env={"SBATCH_PARTITION": "env", "SBATCH_TIMELIMIT": "5"})
    assert opts["partition"] == "debug"
    assert opts["time"] == "5"
    assert opts["job_name"] == "myjob"
    assert opts["nodes"] == "2-4"


def test_request_body_for_a_script():
    opts = _opts(
        "-n",
        "4",
        "-c",
        "2",
        "--mem=4G",
        "-A",
        "physics",
        "-q",
        "high",
        "-H",
        "--no-requeue",
        "-L",
        "flat:2",
        "-a",
        "0-15%4",
        "-w",
        "node[01-02]",
        "-x",
        "node03",
        "--begin=now+60",
        "-C",
        "a&b",
        "-e",
        "err",
        "-i",
        "in",
        "--reservation=r1",
        "-D",
        "sub",
        script=SCRIPT,
    )
    body = sbatch.build_request(
        opts,
        script=SCRIPT,
        script_name="dir/job.sh",
        script_args=["x", "-y"],
        environ={"A": "1"},
        cwd="/home/u",
    )
    assert body == {
        "script": SCRIPT,
        "argv": ["x", "-y"],
        "name": "myjob",
        "partition": "batch",
        "nodes": "2-4",
        "ntasks": 4,
        "cpus_per_task": 2,
        "mem": "4G",
        "time": "1:00:00",
        "account": "physics",
        "qos": "high",
        "output": "/tmp/out file %j.log",
        "error": "err",
        "input": "in",
        "nodelist": "node[01-02]",
        "exclude": "node03",
        "licenses": "flat:2",
        "reservation": "r1",
        "begin": "now+60",
        "array": "0-15%4",
        "constraint": "a&b",
        "work_dir": "/home/u/sub",
        "hold": True,
        "requeue": False,
        # sbatch's set_envs: -n and -c in the job's environment as sbatch puts them there.
        # and where it was run from, on which host (sbatch.c's _set_submit_dir_env).
        "environment": {
            "A": "1",
            "SLURM_NTASKS": "4",
            "SLURM_NPROCS": "4",
            "SLURM_CPUS_PER_TASK": "2",
            "SLURM_SUBMIT_DIR": "/home/u",
            "SLURM_SUBMIT_HOST": os.uname().nodename,
        },
        "alloc_node": os.uname().nodename,  # AllocNode:Sid
        "alloc_sid": os.getsid(0),
    }


def test_wrap_body_and_default_names():
    body = sbatch.build_request(
        _opts("--wrap", "sleep 1", "--license=x:1", "--test-only", "--requeue"),
        script=None,
        script_name=None,
        script_args=[],
        environ={},
        cwd="/w",
    )
    assert body == {
        "wrap": "sleep 1",
        "name": "wrap",
        "licenses": "x:1",
        "work_dir": "/w",
        "requeue": True,
        "test_only": True,
        "environment": {"SLURM_SUBMIT_DIR": "/w", "SLURM_SUBMIT_HOST": os.uname().nodename},
        **sbatch.submitted_from(),
    }
    from_stdin = sbatch.build_request(
        {}, script="#!/bin/sh\n", script_name=None, script_args=[], environ={}, cwd="/w"
    )
    assert from_stdin["name"] == "sbatch"
    named = sbatch.build_request(
        {}, script="#!/bin/sh\n", script_name="/a/b/run.sh", script_args=[], environ={}, cwd="/w"
    )
    assert named["name"] == "run.sh"
    assert (
        sbatch.build_request(
            {"chdir": "/abs"}, script="#!/bin/sh\n", script_name=None, script_args=[], environ={}, cwd="/w"
        )["work_dir"]
        == "/abs"
    )


def test_export_semantics():
    env = {"PATH": "/bin", "HOME": "/h", "SLURM_CONF": "/etc/slurm.conf"}
    assert sbatch.export_environment(None, env) == env
    assert sbatch.export_environment("ALL", env) == env
    assert sbatch.export_environment("NONE", env) == {"SLURM_CONF": "/etc/slurm.conf"}
    assert sbatch.export_environment("PATH,X=1", env) == {
        "PATH": "/bin",
        "X": "1",
        "SLURM_CONF": "/etc/slurm.conf",
    }
    assert sbatch.export_environment("ALL,X=1", env) == {**env, "X": "1"}


def test_export_none_loads_the_login_environment_on_the_node():
    """sbatch(1): --export=NONE implies --get-user-env (#16 point 6); an explicit one wins."""

    def body(opts: dict) -> dict:
        return sbatch.build_request(opts, script="#!/bin/sh\n", script_name=None, script_args=[], environ={},
                                    cwd="/w")  # fmt: skip

    assert body({"export": "NONE"})["get_user_env"] == "8"
    assert body({"export": "none", "get_user_env": "20S"})["get_user_env"] == "20S"
    assert "get_user_env" not in body({"export": "PATH"})
    assert "get_user_env" not in body({})


def test_script_sanity_checks():
    assert sbatch.check_script("#!/bin/sh\ntrue\n") is None
    assert sbatch.check_script("") == "Batch script is empty!"
    assert "does not look like a batch script" in sbatch.check_script("echo hi\n")
    assert "DOS line breaks" in sbatch.check_script("#!/bin/sh\r\ntrue\r\n")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--foo", "x.sh"], "sbatch: unrecognized option '--foo'"),
        (
            ["--c=x", "--wrap", "true"],
            "sbatch: option '--c=x' is ambiguous; possibilities: '--constraint' '--cpus-per-task'",
        ),  # getopt_long's word for a prefix of several options
        # slurm_opt.c's parse_int, not argparse's words
        (["-n", "two", "--wrap", "true"], 'sbatch: error: Invalid numeric value "two" for --ntasks.'),
        (["--wrap", "true", "script.sh"], "sbatch: error: script arguments not permitted with --wrap option"),
        (["/nonexistent/job.sh"], "sbatch: error: Unable to open file /nonexistent/job.sh"),
    ],
)
def test_argument_errors(argv, expected, capsys):
    with pytest.raises(SystemExit) as raised:
        raise SystemExit(main(["fsched", "sbatch", *argv]))
    assert raised.value.code == 1
    assert capsys.readouterr().err.startswith(expected)


def test_mail_options_and_exclusive_are_sent(api, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 5, "job_ids": [5], "array_job_id": None})
    argv = ["--mail-type=end,fail", "--mail-user=ann@example.org", "--exclusive", "--wrap", "true"]
    assert main(["fsched", "sbatch", *argv]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("Submitted batch job 5\n", "")
    body = api.requests[0]["body"]
    assert (body["mail_type"], body["mail_user"], body["exclusive"]) == ("END,FAIL", "ann@example.org", True)


def test_a_bad_mail_type_is_refused_as_sbatch_does(api, capsys):
    assert main(["fsched", "sbatch", "--mail-type=BEGIN,SOMETIMES", "--wrap", "true"]) == 1
    assert capsys.readouterr().err == "sbatch: error: --mail-type=BEGIN,SOMETIMES invalid\n"
    assert not api.requests


def test_submission_over_http(api, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_VAR", "42")
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -p debug\n#SBATCH -t 5\necho hi\n")
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 7, "job_ids": [7], "array_job_id": None})
    assert main(["fsched", "sbatch", "-t", "10", str(script), "arg1"]) == 0
    assert capsys.readouterr().out == "Submitted batch job 7\n"
    body = api.requests[0]["body"]
    assert (body["partition"], body["time"], body["name"], body["argv"]) == (
        "debug",
        "10",
        "job.sh",
        ["arg1"],
    )
    assert body["work_dir"] == str(tmp_path)
    assert body["environment"]["MY_VAR"] == "42"
    assert api.requests[0]["headers"]["Authorization"] == "Token tok123"

    assert main(["fsched", "sbatch", "--parsable", "--export=NONE", "--wrap", "true"]) == 0
    assert capsys.readouterr().out == "7\n"
    assert "MY_VAR" not in api.requests[1]["body"]["environment"]


def test_submission_refused_by_the_controller(api, capsys):
    api.routes[("POST", "/api/jobs/")] = (
        400,
        {"error": "Invalid partition name specified", "field": "partition"},
    )
    assert main(["fsched", "sbatch", "-p", "nosuch", "--wrap", "true"]) == 1
    captured = capsys.readouterr()
    assert captured.err == "sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    assert captured.out == ""


def test_a_job_that_can_never_run_prints_slurmctlds_line_then_the_refusal(api, capsys):
    api.routes[("POST", "/api/jobs/")] = (
        400,
        {
            "error": "Requested node configuration is not available",
            "field": "mem",
            "explanation": "no node of partition debug has 1048576 MB",
            "err_msg": "Memory specification can not be satisfied",
        },
    )
    assert main(["fsched", "sbatch", "--mem=1T", "--wrap", "true"]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        "sbatch: error: Memory specification can not be satisfied\n"
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
    )
    assert captured.out == ""


def test_test_only_prints_the_estimate(api, capsys):
    message = (
        "Job 12 to start at 2024-03-01T10:00:00 using 2 processors on nodes node[01-02] in partition debug"
    )
    api.routes[("POST", "/api/jobs/")] = (
        200,
        {"job_id": None, "start_time": "x", "nodes": "n", "message": message},
    )
    assert main(["fsched", "sbatch", "--test-only", "--wrap", "true"]) == 0
    assert capsys.readouterr().err == f"sbatch: {message}\n"
    assert api.requests[0]["body"]["test_only"] is True


def test_wait_returns_the_jobs_exit_code(api, capsys):
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 9, "job_ids": [9], "array_job_id": None})
    api.routes[("GET", "/api/jobs/9/")] = (200, {"job_id": 9, "state": "FAILED", "exit_code": "3:0"})
    assert main(["fsched", "sbatch", "-W", "--wrap", "false"]) == 3


# ---------------------------------------------------------------- Idempotency-Key and the retry

ACCEPTED = {"job_id": 31, "job_ids": [31], "array_job_id": None}


@pytest.fixture
def breaking(monkeypatch):
    servers = []

    def start(*actions: str) -> BreakingServer:
        server = BreakingServer(list(actions), ACCEPTED)
        monkeypatch.setenv("FSCHED_URL", server.url)
        monkeypatch.setenv("FSCHED_TOKEN", "tok123")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def test_each_submission_sends_a_fresh_uuid4_idempotency_key(api, capsys):
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 5, "job_ids": [5], "array_job_id": None})
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 0
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 0
    keys = [r["headers"]["Idempotency-Key"] for r in api.requests]
    assert all(uuid.UUID(k).version == 4 and str(uuid.UUID(k)) == k for k in keys)
    assert keys[0] != keys[1]
    assert capsys.readouterr().err == ""  # no retry, no notice


def test_other_commands_send_no_idempotency_key(api):
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [1], "errors": []})
    assert main(["fsched", "scancel", "1"]) == 0
    assert "Idempotency-Key" not in api.requests[0]["headers"]


@pytest.mark.parametrize("broken", [CLOSE, RESET, UNKNOWN])
def test_a_lost_answer_is_retried_once_with_the_same_key(breaking, capsys, broken):
    server = breaking(broken)
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "Submitted batch job 31\n"
    assert "retrying with the same Idempotency-Key" in captured.err
    assert len(server.requests) == 2
    first, second = server.requests
    assert first["headers"]["idempotency-key"] == second["headers"]["idempotency-key"]
    assert first["body"] == second["body"]


def test_a_second_lost_answer_is_an_unknown_outcome_error(breaking, capsys):
    server = breaking(CLOSE, RESET)
    assert main(["fsched", "sbatch", "--parsable", "--wrap", "true"]) == 1
    captured = capsys.readouterr()
    key = server.requests[0]["headers"]["idempotency-key"]
    assert captured.out == ""
    assert captured.err.endswith(
        "sbatch: error: Batch job submission failed: the connection to the controller closed before its "
        "answer, and the retry failed too: Unable to contact slurm controller (connect failure). "
        f"Whether the job was stored is unknown: check squeue for it (Idempotency-Key {key})\n"
    )
    assert len(server.requests) == 2  # once, not more


def test_the_retry_waits_for_a_controller_that_is_restarting(breaking, capsys):
    server = breaking(RESTART)
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 0
    assert capsys.readouterr().out == "Submitted batch job 31\n"
    assert server.refused_for > 0.3  # the retry met refused connections, and waited
    assert len(server.requests) == 2


@pytest.mark.parametrize("flags", sbatch.UNSUPPORTED, ids=lambda flags: flags[-1])
def test_an_unsupported_option_is_refused_naming_it(api, capsys, tmp_path, monkeypatch, flags):
    """(#16 point 6) Never "ignored": the job is not submitted, and the error names the
    option, whether it comes from the command line or from a #SBATCH line."""
    monkeypatch.chdir(tmp_path)
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 5, "job_ids": [5], "array_job_id": None})
    long = next(f for f in flags if f.startswith("--"))
    word = long if long in sbatch.UNSUPPORTED_ALONE else f"{long}=1"
    assert main(["fsched", "sbatch", "--parsable", word, "--wrap", "true"]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"sbatch: error: {long} is not supported by fsched\n")
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\n#SBATCH {word}\ntrue\n")
    assert main(["fsched", "sbatch", str(script)]) == 1
    assert capsys.readouterr().err == f"sbatch: error: {long} is not supported by fsched\n"
    assert not api.requests
