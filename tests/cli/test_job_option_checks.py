"""sbatch, salloc and srun refuse the job options Slurm's commands parse themselves with
Slurm's own line (slurm_opt.c, proc_args.c), exit 1 and nothing sent; ``--exclusive``
takes arg_set_exclusive's values."""

from __future__ import annotations

import pytest

from cli.main import main

REFUSED = [
    (["-N", "abc"], '"abc" is not a valid node count'),
    (["-N", "2-x"], '"x" is not a valid node count'),
    (["-n", "abc"], 'Invalid numeric value "abc" for --ntasks.'),
    (["--ntasks=0"], 'Invalid numeric value "0" for --ntasks.'),
    (["-c", "x"], 'Invalid numeric value "x" for --cpus-per-task.'),
    (["--ntasks-per-node=q"], 'Invalid numeric value "q" for --ntasks-per-node.'),
    (["-t", "abc"], "Invalid --time specification"),
    (["--time-min=1:2:3:4"], "Invalid --time-min specification"),
    (["--mem=abc"], "Invalid --mem specification"),
    (["--mem-per-cpu=1.5G"], "Invalid --mem-per-cpu specification"),
    (["--begin=garbage"], "Invalid --begin specification"),
    (["--signal=FOO"], "Invalid --signal specification"),
    (["--exclusive=bad"], "Invalid --exclusive specification"),
    (["--exclusive=user"], "--exclusive=user is not supported by fsched"),
]


@pytest.mark.parametrize("case", REFUSED)
@pytest.mark.parametrize("prog", ["sbatch", "salloc", "srun"])
def test_refused_with_slurms_line_and_nothing_sent(api, capsys, prog, case):
    words, line = case
    tail = ["--wrap", "true"] if prog == "sbatch" else ["true"]
    try:
        status = main(["fsched", prog, *words, *tail])
    except SystemExit as exc:  # the option parser's own exit
        status = exc.code
    assert status == 1
    assert capsys.readouterr().err == f"{prog}: error: {line}\n"
    assert api.requests == []


def test_a_script_directive_is_checked_too(api, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -t soon\ntrue\n")
    assert main(["fsched", "sbatch", str(script)]) == 1
    assert capsys.readouterr().err == "sbatch: error: Invalid --time specification\n"
    assert api.requests == []


@pytest.mark.parametrize(
    "case",
    [
        (["--exclusive"], True, None),
        (["--exclusive=EXCLUSIVE"], True, None),
        (["--exclusive=oversubscribe"], None, True),
    ],
)
def test_exclusive_values(api, tmp_path, monkeypatch, case):
    words, exclusive, oversubscribe = case
    monkeypatch.chdir(tmp_path)
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 5, "job_ids": [5], "array_job_id": None})
    assert main(["fsched", "sbatch", *words, "-t", "0", "-N", "1-2", "--wrap", "true"]) == 0
    body = api.requests[0]["body"]
    assert (body.get("exclusive"), body.get("oversubscribe")) == (exclusive, oversubscribe)


def test_exclusive_alone_does_not_take_the_next_word(api, capsys, tmp_path, monkeypatch):
    # getopt's optional_argument: "--exclusive job.sh" is the flag, then the script.
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 5, "job_ids": [5], "array_job_id": None})
    assert main(["fsched", "sbatch", "--exclusive", str(script)]) == 0
    assert api.requests[0]["body"]["exclusive"] is True
    assert "#!/bin/sh" in api.requests[0]["body"]["script"]


def test_exclusive_alone_through_argparse_too(api, tmp_path, monkeypatch):
    # "-J -x" sends the line to argparse, whose nargs="?" would take the script as the value.
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    api.routes[("POST", "/api/jobs/")] = (201, {"job_id": 5, "job_ids": [5], "array_job_id": None})
    assert main(["fsched", "sbatch", "-J", "-x", "--exclusive", str(script)]) == 0
    body = api.requests[0]["body"]
    assert (body["name"], body["exclusive"]) == ("-x", True)
    assert "#!/bin/sh" in body["script"]
