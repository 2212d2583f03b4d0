"""sbatch --comment, --open-mode, --time-min and --signal in the CLI (#16 point 6): sent
to the controller (no "ignored" warning any more), and shown as Slurm shows them by
``scontrol show job`` (Comment=, TimeMin=) and ``squeue %k``."""

from __future__ import annotations

from cli.main import main
from cli.scontrol import job_record, render_record
from cli.squeue import format_jobs


def test_the_options_are_sent_from_the_command_line_and_the_script(api, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SBATCH_SIGNAL", "USR2@30")
    script = tmp_path / "job.sh"
    script.write_text('#!/bin/sh\n#SBATCH --comment "a sweep"\n#SBATCH --open-mode=append\ntrue\n')
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 5, "job_ids": [5], "array_job_id": None})
    assert main(["fsched", "sbatch", "--time-min=5", "--signal=B:USR1@90", str(script)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "Submitted batch job 5\n"
    assert "warning" not in captured.err
    body = api.requests[0]["body"]
    assert (body["comment"], body["open_mode"], body["time_min"], body["signal"]) == (
        "a sweep",
        "append",
        "5",
        "B:USR1@90",  # the command line over SBATCH_SIGNAL
    )


def test_scontrol_shows_comment_and_time_min(objs):
    plain = render_record(job_record(objs.job())).split("\n")
    assert not any(line.strip().startswith("Comment=") for line in plain)
    lines = render_record(job_record(objs.job(comment="a sweep", time_min=90))).split("\n")
    assert "   RunTime=00:00:12 TimeLimit=01:00:00 TimeMin=01:30:00" in lines
    # After WorkDir=, before StdErr=, as slurm_sprint_job_info prints it.
    at = lines.index("   Comment=a sweep")
    assert lines[at - 1].startswith("   WorkDir=") and lines[at + 1].startswith("   StdErr=")


def test_squeue_comment_column(objs):
    assert format_jobs([objs.job(comment="a sweep"), objs.job()], "%.10k") == [
        "   COMMENT",
        "   a sweep",
        "    (null)",
    ]


def test_mem_per_cpu_is_sent_and_exclusive_with_mem(api, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 6, "job_ids": [6], "array_job_id": None})
    assert main(["fsched", "sbatch", "--mem=1G", "--mem-per-cpu=500", "--wrap", "true"]) == 1
    assert capsys.readouterr().err == (
        "sbatch: error: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.\n"
    )
    assert api.requests == []
    # The command line's option replaces the script's other one.
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --mem=4G\ntrue\n")
    assert main(["fsched", "sbatch", "--mem-per-cpu=500", str(script)]) == 0
    body = api.requests[0]["body"]
    assert body["mem_per_cpu"] == "500" and "mem" not in body


def test_scontrol_shows_min_memory_cpu(objs):
    lines = render_record(job_record(objs.job(mem_per_cpu=512, mem_per_node=2048))).split("\n")
    assert "   MinCPUsNode=1 MinMemoryCPU=512M MinTmpDiskNode=0" in lines


def test_scontrol_shows_ntasks_per_node(objs):
    lines = render_record(job_record(objs.job(ntasks_per_node=2))).split("\n")
    assert "   Socks/Node=* NtasksPerN:B:S:C=2:0:*:* CoreSpec=*" in lines


def test_scontrol_shows_the_deadline(objs):
    lines = render_record(job_record(objs.job(deadline="2024-03-01T12:00:00Z"))).split("\n")
    assert (
        "   StartTime=2024-03-01T10:00:05 EndTime=2024-03-01T11:00:05 Deadline=2024-03-01T12:00:00" in lines
    )


def test_get_user_env_alone_or_with_a_value(api, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 7, "job_ids": [7], "array_job_id": None})
    assert main(["fsched", "sbatch", "--get-user-env", "--wrap", "true"]) == 0
    assert main(["fsched", "sbatch", "--get-user-env=10S", "--wrap", "true"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert [r["body"]["get_user_env"] for r in api.requests] == ["8", "10S"]
