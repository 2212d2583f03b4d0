"""Small pure pieces of the agent: status decoding, signals, URLs, backoff, the command line."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from agent.daemon import backoff_delay, endpoint_url
from agent.jobs import Account, boot_ticks, decode_status, job_environment, parse_signal, start_ticks
from agent.main import main, parse_config
from agent.spool import JobState, Spool


def test_decode_status() -> None:
    assert decode_status(0) == (0, 0)
    assert decode_status(3) == (3, 0)
    assert decode_status(128 + 15) == (0, 15)
    assert decode_status(128 + 9) == (0, 9)
    assert decode_status(255) == (255, 0)


def test_parse_signal() -> None:
    assert parse_signal("STOP") == signal.SIGSTOP
    assert parse_signal("sigusr1") == signal.SIGUSR1
    assert parse_signal(15) == signal.SIGTERM
    assert parse_signal("9") == signal.SIGKILL
    with pytest.raises(ValueError, match="invalid signal"):
        parse_signal("NOPE")


def test_endpoint_url() -> None:
    assert endpoint_url("http://ctl:8000") == "ws://ctl:8000/ws/agent/"
    assert endpoint_url("https://ctl/") == "wss://ctl/ws/agent/"
    assert endpoint_url("ws://ctl:8000/ws/agent/") == "ws://ctl:8000/ws/agent/"


def test_backoff_grows_and_is_capped() -> None:
    upper = [backoff_delay(a, 5.0, rand=lambda lo, hi: hi) for a in range(12)]
    assert upper[:3] == [0.1, 0.2, 0.4]
    assert max(upper) == 5.0
    assert all(backoff_delay(a, 5.0) <= 5.0 for a in range(40))


def test_environment_overrides_submitter_slurm_variables() -> None:
    job = {"job_id": 5, "batch_host": "n1", "environment": {"SLURM_ARRAY_TASK_ID": "3", "A": 1}}
    env = job_environment(job, Account(name="alice", home="/home/alice"))
    assert env["A"] == "1"
    assert "SLURM_ARRAY_TASK_ID" not in env
    assert env["SLURM_JOB_NODELIST"] == "n1"
    assert (env["HOME"], env["USER"], env["LOGNAME"]) == ("/home/alice", "alice", "alice")


def test_the_batch_step_sees_its_allocation_as_slurmd_describes_it() -> None:
    # env_array_for_batch_job: the CPUs per node, a block layout's tasks per node (from
    # sbatch's SLURM_NTASKS, else SLURM_NTASKS_PER_NODE, else what the CPUs hold),
    # ENVIRONMENT=BATCH and HOSTNAME the node's name.
    alice = Account(name="alice", home="/home/alice")
    job = {"job_id": 5, "batch_host": "n1", "node_list": "n[1-2]", "num_nodes": 2, "cpus_per_node": [4, 4]}
    env = job_environment({**job, "environment": {"SLURM_NTASKS": "5"}}, alice)
    assert (env["SLURM_JOB_CPUS_PER_NODE"], env["SLURM_TASKS_PER_NODE"]) == ("4(x2)", "3,2")
    assert (env["ENVIRONMENT"], env["HOSTNAME"]) == ("BATCH", "n1")
    env = job_environment({**job, "environment": {"SLURM_CPUS_PER_TASK": "2"}}, alice)
    assert env["SLURM_TASKS_PER_NODE"] == "2(x2)" and "SLURM_NTASKS" not in env
    env = job_environment({**job, "cpus_per_node": [4, 2], "ntasks_per_node": 1, "environment": {}}, alice)
    assert (env["SLURM_JOB_CPUS_PER_NODE"], env["SLURM_TASKS_PER_NODE"]) == ("4,2", "1(x2)")
    # sbatch's submit directory (not the job's --chdir), the job's uid and gid.
    env = job_environment(
        {**job, "work_dir": "/elsewhere", "environment": {"SLURM_SUBMIT_DIR": "/home/a"}}, alice
    )
    assert env["SLURM_SUBMIT_DIR"] == "/home/a"
    assert (env["SLURM_JOB_UID"], env["SLURM_JOB_GID"]) == (str(os.geteuid()), str(os.getegid()))
    as_bob = Account(name="bob", home="/home/bob", uid=1234, gid=99)
    assert (job_environment(job, as_bob)["SLURM_JOB_UID"], job_environment(job, as_bob)["SLURM_JOB_GID"]) == (
        "1234",
        "99",
    )
    # From a controller that sends no CPUs per node: nothing made up.
    assert "SLURM_TASKS_PER_NODE" not in job_environment({"job_id": 6, "batch_host": "n1"}, alice)


def test_the_batch_step_sees_what_its_credential_holds() -> None:
    # env_array_for_batch_job and slurmstepd's setup_env: the memory asked for (per CPU or
    # per node, never both), licenses, reservation, the start and expected end, the task's
    # ids as task 0 of node 0, the topology address; account and QOS only when the job has
    # them.
    alice = Account(name="alice", home="/home/alice")
    job = {"job_id": 5, "batch_host": "n1", "node_list": "n1", "num_nodes": 1, "qos": "normal",
           "mem_per_node": 500, "licenses": "fluent:2", "reservation": "maint",
           "start_time": 1_780_000_000, "end_time": 1_780_000_600}  # fmt: skip
    env = job_environment(job, alice)
    assert (env["SLURM_MEM_PER_NODE"], env["SLURM_JOB_LICENSES"], env["SLURM_JOB_RESERVATION"]) == (
        "500",
        "fluent:2",
        "maint",
    )
    assert (env["SLURM_JOB_START_TIME"], env["SLURM_JOB_END_TIME"]) == ("1780000000", "1780000600")
    assert [env[k] for k in ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_GTIDS")] == ["0"] * 4
    assert (env["SLURM_TOPOLOGY_ADDR"], env["SLURM_TOPOLOGY_ADDR_PATTERN"]) == ("n1", "node")
    assert env["SLURM_JOB_QOS"] == "normal" and "SLURM_JOB_ACCOUNT" not in env
    per_cpu = job_environment({**job, "mem_per_cpu": 250, "account": "physics"}, alice)
    assert (per_cpu["SLURM_MEM_PER_CPU"], per_cpu["SLURM_JOB_ACCOUNT"]) == ("250", "physics")
    assert "SLURM_MEM_PER_NODE" not in per_cpu
    bare = job_environment({"job_id": 6, "batch_host": "n1"}, alice)
    unset = {"SLURM_MEM_PER_NODE", "SLURM_JOB_LICENSES", "SLURM_JOB_START_TIME", "SLURM_JOB_QOS"}
    assert not unset & set(bare)


def test_process_identity_from_ticks_read_around_the_fork() -> None:
    before = boot_ticks()
    proc = subprocess.Popen(["sleep", "5"])
    try:
        state = JobState(1, "n1", proc.pid, proc.pid, 0.0, before, boot_ticks(), "/nonexistent")
        assert state.is_process(start_ticks(proc.pid))
        assert not state.is_process(start_ticks(os.getpid()))  # started earlier
    finally:
        proc.kill()
        proc.wait()
    assert start_ticks(proc.pid) is None
    assert not state.is_process(None)


def test_status_file_only_counts_when_complete(tmp_path: Path) -> None:
    p = tmp_path / "status"
    for content, expected in ((b"143\n", 143), (b"", None), (b"14", None), (b"x\n", None)):
        p.write_bytes(content)
        assert Spool.read_status(str(p)) == expected
    assert Spool.read_status(str(tmp_path / "missing")) is None


def test_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FSCHED_URL", "http://ctl:9000")
    monkeypatch.setenv("FSCHED_AGENT_KEY", "k")
    monkeypatch.setenv("FSCHED_STATE_DIR", str(tmp_path))
    config, level = parse_config(
        ["--nodes", "node[01-03]", "--cpus", "4", "--features", "a, b", "--conf", "X"]
    )
    assert [n.name for n in config.nodes] == ["node01", "node02", "node03"]
    assert {(n.cpus, n.features, n.conf) for n in config.nodes} == {(4, "a,b", "X")}
    assert config.nodes[0].real_memory > 0
    assert config.controller == "http://ctl:9000"
    assert config.key == "k"
    assert config.spool_dir == str(tmp_path / "agent" / "node01")
    assert level == "INFO"


def test_bad_command_line_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--nodes", "node[01-"]) == 2
    assert "invalid hostlist" in capsys.readouterr().err
    assert main(["--nodes", "n1", "--cpus", "0"]) == 2


def test_key_from_a_private_file_never_from_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("FSCHED_AGENT_KEY", raising=False)
    key = tmp_path / "agent_key"
    key.write_text("s3cret\n")
    key.chmod(0o600)
    config, _ = parse_config(["--nodes", "n1", "--key-file", str(key)])
    assert config.key == "s3cret"
    assert main(["--nodes", "n1", "--key", "s3cret"]) == 2  # gone: ps shows argv to everyone
    assert "--key is not accepted (every local user sees the command line in ps)" in capsys.readouterr().err
    key.chmod(0o604)
    assert main(["--nodes", "n1", "--key-file", str(key)]) == 2
    assert "mode 0604 lets other users read or change the cluster key" in capsys.readouterr().err
    assert main(["--nodes", "n1", "--key-file", str(tmp_path / "missing")]) == 2
    assert "No such file or directory" in capsys.readouterr().err
    assert main(["--nodes", "n1"]) == 2
    assert "no cluster key: give --key-file PATH or set FSCHED_AGENT_KEY" in capsys.readouterr().err


def test_node_rules_come_from_slurm_conf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FSCHED_AGENT_KEY", "k")
    monkeypatch.setenv("FSCHED_CONF_DIR", str(tmp_path))
    (tmp_path / "slurm.conf").write_text("ClusterName=c\nSlurmctldHost=h\nNodeName=n1 CPUs=1\n")
    config, _ = parse_config(["--nodes", "n1"])
    assert not config.rules.root_jobs and config.rules.power_programs == {}
    config, _ = parse_config(["--nodes", "n1", "--allow-root-jobs"])
    assert config.rules.root_jobs
    (tmp_path / "slurm.conf").write_text("ClusterName=c\nNodeName=n1 CPUs=lots\n")
    assert main(["--nodes", "n1"]) == 2
    assert "slurm.conf:2:" in capsys.readouterr().err
