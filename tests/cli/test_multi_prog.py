"""srun --multi-prog's configuration file read as Slurm's srun checks it and slurmstepd
builds each task's argv (cli/multi_prog.py)."""

from __future__ import annotations

import pytest

from cli import multi_prog as mp
from cli import srun

CONF = """\
# a comment
0 echo zero %t
1-3,5 echo other t=%t o=%o
4 printf a\\ b 'c d' x%%y
"""


def test_each_task_s_argv_with_its_id_offset_quotes_and_escapes():
    assert mp.task_count(CONF, "mp.conf", None) == 6  # no -n: the highest id named, plus one
    argv = mp.task_argv(CONF, "mp.conf", 6, ["extra"])
    assert argv == [
        ["echo", "zero", "0", "extra"],
        ["echo", "other", "t=1", "o=0", "extra"],
        ["echo", "other", "t=2", "o=1", "extra"],
        ["echo", "other", "t=3", "o=2", "extra"],
        ["printf", "a b", "c d", "xy", "extra"],  # %% is no code: both characters go
        ["echo", "other", "t=5", "o=3", "extra"],  # 5 comes after 1-3: offset 3
    ]


def test_an_asterisk_takes_every_task_left_and_a_line_may_continue():
    conf = "0 a\\\n  continued\n* b %o\n"
    assert mp.task_count(conf, "c", 3) == 3
    assert mp.task_argv(conf, "c", 3, []) == [["a", "continued"], ["b", "1"], ["b", "2"]]


@pytest.mark.parametrize(
    ("conf", "ntasks", "lines"),
    [
        ("0-1 true\n1 true\n", 2, ["Duplicate record for task 1", "Line 2 of configuration file c invalid"]),
        ("0 true\n", 2, ["Configuration file c invalid, no record for task id 1"]),
        ("0-4 true\n", 2, ["Invalid task id, 4 >= ntasks", "Line 1 of configuration file c invalid"]),
        ("x true\n", 1, ["Invalid task range specification (x)", "Line 1 of configuration file c invalid"]),
        ("0\n", 1, ["Line 1 of configuration file c invalid"]),
        ("* a\n0 b\n", 1, ["Task range specification with asterisk must be last",
                           "Line 2 of configuration file c invalid"]),
    ],
)  # fmt: skip
def test_srun_s_refusals(conf, ntasks, lines):
    with pytest.raises(mp.MultiProgError) as info:
        mp.task_count(conf, "c", ntasks)
    assert str(info.value).split("\n") == lines


def test_srun_reads_the_file_and_refuses_in_its_words(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_NTASKS", raising=False)
    monkeypatch.delenv("SLURM_NPROCS", raising=False)
    conf = tmp_path / "mp.conf"
    conf.write_text("0 hostname\n1 echo %t\n")
    ns = srun.parse(["--multi-prog", str(conf), "-v"])
    assert srun.multi_prog(ns) is None
    assert (ns.ntasks, ns.task_argv) == (2, [["hostname", "-v"], ["echo", "1", "-v"]])
    ns = srun.parse(["--multi-prog", str(tmp_path / "none")])
    assert srun.multi_prog(ns) == f"srun: error: Unable to open configuration file {tmp_path / 'none'}"
