"""salloc's side that needs no controller (#16 point 2): its options are sbatch's job
options without a batch script's own, its request carries no script, the SLURM_* it sets
are Slurm's forms, and the CLI authenticates with the job credential only when the caller
has no token of its own."""

from __future__ import annotations

import pytest

from cli import salloc
from cli.allocation import allocation_env, compressed, request_body, tasks_per_node
from cli.client import Client


def test_salloc_takes_sbatchs_job_options_and_the_command_after_them():
    ns = salloc.parse_args(["-N2", "-p", "debug", "-t", "5", "--mem=1G", "sh", "-c", "echo -n $X"])
    assert (ns.nodes, ns.partition, ns.time, ns.mem) == ("2", "debug", "5", "1G")
    assert (ns.command, ns.command_args) == ("sh", ["-c", "echo -n $X"])
    dests = {row[1] for row in salloc.options()}
    assert {"array", "wrap", "output", "error", "open_mode", "parsable"}.isdisjoint(dests)
    with pytest.raises(SystemExit):
        salloc.parse_args(["--wrap", "true"])


def test_the_default_command_is_the_users_shell():
    assert salloc.default_command({"SHELL": "/bin/zsh"}) == ["/bin/zsh"]
    assert salloc.default_command({})[0].startswith("/")


def test_the_request_is_an_allocation_without_the_batch_scripts_options():
    body = request_body(
        {"nodes": "2", "ntasks": 4, "output": "x.out", "job_name": None, "chdir": "sub", "export": "NONE"},
        environ={"SLURM_X": "1", "HOME": "/h"},
        cwd="/work",
    )
    assert body["allocation"] is True and "script" not in body and "output" not in body
    assert (body["nodes"], body["ntasks"], body["name"], body["work_dir"]) == (
        "2",
        4,
        "interactive",
        "/work/sub",
    )
    assert body["environment"] == {"SLURM_X": "1"}


def test_per_node_lists_fold_as_slurm_prints_them():
    assert compressed([4, 4, 2]) == "4(x2),2"
    assert compressed([1]) == "1"
    assert tasks_per_node([4, 4], 1, None) == [4, 4]
    assert tasks_per_node([4, 4], 2, None) == [2, 2]
    assert tasks_per_node([4, 4], 1, 5) == [4, 1]
    assert tasks_per_node([2, 2, 2], 1, 2) == [1, 1, 0]


def test_the_allocations_variables():
    info = {
        "job": {
            "job_id": 7, "name": "sh", "node_list": "node[01-02]", "batch_host": "node01",
            "cpus_per_task": 1, "partition": "debug", "account": "physics", "qos": "normal",
            "mem_per_node": 500, "mem_per_cpu": None,
        },
        "alloc": {"node02": 2, "node01": 2},
        "cluster_name": "demo",
    }  # fmt: skip
    env = allocation_env(info, {"ntasks": 3}, cwd="/w", submit_host="login1")
    assert env["SLURM_JOB_ID"] == env["SLURM_JOBID"] == "7"
    assert env["SLURM_JOB_NODELIST"] == env["SLURM_NODELIST"] == "node[01-02]"
    assert (env["SLURM_NNODES"], env["SLURM_JOB_CPUS_PER_NODE"], env["SLURM_TASKS_PER_NODE"]) == (
        "2",
        "2(x2)",
        "2,1",
    )
    assert (env["SLURM_NTASKS"], env["SLURM_NPROCS"], env["SLURM_MEM_PER_NODE"]) == ("3", "3", "500")
    assert (env["SLURM_SUBMIT_DIR"], env["SLURM_SUBMIT_HOST"], env["SLURM_CLUSTER_NAME"]) == (
        "/w",
        "login1",
        "demo",
    )


def test_the_job_credential_is_used_only_without_a_token_of_ones_own(monkeypatch, tmp_path):
    monkeypatch.setenv("FSCHED_CLI_CONFIG", str(tmp_path / "none.json"))
    monkeypatch.setenv("FSCHED_JOB_CREDENTIAL", "7.secret")
    monkeypatch.delenv("FSCHED_TOKEN", raising=False)
    assert Client(url="http://127.0.0.1:9").job_credential == "7.secret"
    monkeypatch.setenv("FSCHED_TOKEN", "mine.token")
    own = Client(url="http://127.0.0.1:9")
    assert (own.token, own.job_credential) == ("mine.token", None)


def test_scontrol_shows_an_allocations_batch_flag(objs):
    from cli.scontrol import job_record, render_record

    assert "BatchFlag=0" in render_record(job_record(objs.job(batch=False)))
    assert "BatchFlag=1" in render_record(job_record(objs.job()))


class _Answers:
    """The controller's answers to an allocation's renewals, in turn (the last repeats)."""

    def __init__(self, *jobs: dict) -> None:
        self.jobs = list(jobs)

    def post(self, path: str, body: object = None) -> dict:
        job = self.jobs.pop(0) if len(self.jobs) > 1 else self.jobs[0]
        return {"job": job, "launched": job["state"] == "RUNNING", "renew_every": 1}


@pytest.mark.parametrize("prog", ["salloc", "srun"])
def test_only_a_job_that_waits_is_said_to_be_queued(prog, monkeypatch, capsys):
    from cli import allocation

    monkeypatch.setattr(allocation, "POLL", 0)
    started = {"state": "RUNNING", "node_list": "node01"}
    # Started by the pass the submission asked for: no queue to speak of.
    allocation._Holder(_Answers({"state": "PENDING", "reason": "None"}, started), 5, prog).wait_granted()
    immediate = capsys.readouterr().err
    assert "queued" not in immediate
    assert immediate == ("salloc: Granted job allocation 5\n" if prog == "salloc" else "")
    # A pass left it pending: it waits.
    waiting = {"state": "PENDING", "reason": "Resources"}
    allocation._Holder(_Answers(waiting, waiting, started), 6, prog).wait_granted()
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [
        f"{prog}: job 6 queued and waiting for resources",
        f"{prog}: job 6 has been allocated resources",
    ]
    # srun keeps salloc's other lines for -v, as Slurm's srun does.
    assert lines[2:] == (["salloc: Granted job allocation 6"] if prog == "salloc" else [])


def test_srun_verbose_prints_the_allocation_s_lines(monkeypatch, capsys):
    from cli import allocation

    monkeypatch.setattr(allocation, "POLL", 0)
    started = {"state": "RUNNING", "node_list": "node01"}
    allocation._Holder(_Answers(started), 7, "srun", verbose=True).wait_granted()
    assert capsys.readouterr().err == "srun: Granted job allocation 7\n"


def test_a_closed_stderr_does_not_stop_the_allocation_s_release(monkeypatch):
    """``srun -v ... 2>&1 | head -1``: the Relinquishing line meets a closed pipe; it is lost,
    and the release after it still happens (it once left the job running to its limit)."""
    from cli import allocation

    class ClosedPipe:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    released = []

    class Controller(_Answers):
        def post(self, path: str, body: object = None) -> dict:
            if path.endswith("/release/"):
                released.append(body)
                return {}
            return super().post(path, body)

    monkeypatch.setattr(allocation.sys, "stderr", ClosedPipe())
    holder = allocation._Holder(Controller({"state": "RUNNING"}), 8, "srun", verbose=True)
    holder.tell("Relinquishing job allocation 8")
    holder.release()
    assert released == [{"exit_code": 0, "signal": 0}]


def test_no_shell_is_salloc_s_own_flag():
    assert salloc.parse_args(["--no-shell", "-N1"]).no_shell is True
    assert salloc.parse_args(["-N1"]).no_shell is None


def test_no_shell_waits_for_the_grant_keeps_it_and_says_nothing_more(monkeypatch, capsys):
    """salloc.c: Pending, Granted, then exit(0): no command, no Relinquishing; the job is
    named no-shell unless -J names it."""
    from cli import allocation

    monkeypatch.setattr(allocation, "POLL", 0)

    class Controller:
        def __init__(self) -> None:
            self.posts: list[tuple[str, object]] = []

        def post(self, path: str, body: object = None) -> dict:
            self.posts.append((path, body))
            if path == "/api/jobs/":
                return {"job_id": 9}
            job = {"job_id": 9, "state": "RUNNING", "node_list": "node01"}
            return {"job": job, "launched": True, "renew_every": 1}

        def close(self) -> None:
            pass

    ctl = Controller()
    monkeypatch.setattr("cli.client.Client", lambda: ctl)
    assert salloc.main(["--no-shell", "-N1", "echo", "never"]) == 0
    assert capsys.readouterr().err == "salloc: Pending job allocation 9\nsalloc: Granted job allocation 9\n"
    paths = [p for p, _ in ctl.posts]
    assert paths[0] == "/api/jobs/" and paths[-1] == "/api/jobs/9/allocation/keep/"
    assert ctl.posts[0][1]["name"] == "no-shell"
    assert not any(p.endswith("/release/") for p in paths)
    ctl.posts.clear()
    salloc.main(["--no-shell", "-J", "mine"])
    assert ctl.posts[0][1]["name"] == "mine"


def test_the_interactive_step_runs_only_with_use_interactive_step():
    conf = {"options": {"LaunchParameters": "enable_nss_slurm,use_interactive_step"}}
    assert salloc.interactive_step_options(conf) == "--interactive --preserve-env --pty $SHELL"
    mine = {"options": {**conf["options"], "InteractiveStepOptions": "--interactive --pty bash -l"}}
    assert salloc.interactive_step_options(mine) == "--interactive --pty bash -l"
    assert salloc.interactive_step_options({"options": {"LaunchParameters": "enable_nss_slurm"}}) is None
    assert salloc.interactive_step_options({}) is None


def test_interactive_step_options_are_srun_s_with_the_user_s_shell_and_no_shell_run(capsys):
    ns = salloc.interactive_step("--interactive --preserve-env --pty $SHELL", {"SHELL": "/bin/zsh"})
    assert (ns.interactive, ns.preserve_env, ns.pty, ns.command) == (True, True, "", ["/bin/zsh"])
    quoted = salloc.interactive_step(
        "--interactive -J 'my shell' ${SHELL} -c 'echo $HOME; x'", {"SHELL": "/bin/sh"}
    )
    assert (quoted.job_name, quoted.command) == ("my shell", ["/bin/sh", "-c", "echo $HOME; x"])
    other = salloc.interactive_step("--pty $SHELLX ${SHELL}-x", {"SHELL": "/bin/sh"})
    assert other.command == ["$SHELLX", "/bin/sh-x"]  # another variable is not $SHELL
    # srun's own refusals, before any allocation.
    assert salloc.interactive_step("--interactive --bogus $SHELL", {"SHELL": "/bin/sh"}) == ""
    assert "srun: unrecognized option '--bogus'" in capsys.readouterr().err
    assert salloc.interactive_step("--interactive --pty", {}) == "srun: fatal: No command given to execute."
    assert (
        salloc.interactive_step("--pty=x $SHELL", {})
        == "srun: fatal: --pty=x must be numeric file descriptor"
    )
    assert salloc.interactive_step("--pty 'bash", {}).startswith("srun: error: InteractiveStepOptions: ")


def test_a_bad_interactive_step_option_is_srun_s_error_and_no_job_is_asked_for(monkeypatch, capsys):
    class Controller:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def get(self, path: str, params: object = None) -> dict:
            self.calls.append(path)
            opts = {"LaunchParameters": "use_interactive_step", "InteractiveStepOptions": "--nope $SHELL"}
            return {"options": opts}

        def post(self, path: str, body: object = None) -> dict:
            raise AssertionError(f"no job may be asked for: {path}")

    ctl = Controller()
    monkeypatch.setattr("cli.client.Client", lambda: ctl)
    assert salloc.main(["-N1"]) == 1
    assert ctl.calls == ["/api/config/"]
    assert "srun: unrecognized option '--nope'" in capsys.readouterr().err
