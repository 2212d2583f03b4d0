"""The workload generator (#18 point 2): the same seed writes the same file, and the
workload has the mix that was asked for."""

from __future__ import annotations

import itertools
import shlex
import statistics
from collections import Counter
from pathlib import Path

import pytest

from simulator.workloads import read_workload
from simulator.workloads.generate import main

REPO = Path(__file__).resolve().parents[2]


def gen(tmp_path: Path, *args: str, name: str = "w.yaml") -> Path:
    out = tmp_path / name
    assert main(["--out", str(out), *args]) == 0
    return out


def test_the_same_seed_writes_the_same_workload_and_another_seed_another(tmp_path):
    one = gen(tmp_path, "--jobs", "300", "--seed", "5", name="a.json")
    two = gen(tmp_path, "--jobs", "300", "--seed", "5", name="b.json")
    three = gen(tmp_path, "--jobs", "300", "--seed", "6", name="c.json")
    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes() != three.read_bytes()
    assert len(read_workload(one)) == 300


def test_the_mix(tmp_path):
    out = gen(
        tmp_path,
        "--jobs", "3000", "--seed", "1",
        "--users", "6", "--accounts", "physics,chemistry",
        "--partitions", "batch:3,long:1", "--qos", "normal:1,high:1",
        "--sizes", "1:1,4:1", "--tasks-per-node", "2", "--mem", "1G:1,2G:1",
        "--arrival-rate", "360", "--run-time", "lognormal:600:0.5",
        "--hres-share", "0.3", "--hres", "power:full_node,flat:2",
        "--limit-share", "0.1", "--fail-share", "0.05", "--dependency-share", "0.02",
    )  # fmt: skip
    jobs = read_workload(out)
    n = len(jobs)
    assert n == 3000 and [j.job_id for j in jobs] == list(range(1, n + 1))
    assert {j.user for j in jobs} == {f"user{i}" for i in range(1, 7)}
    # User i always charges the same account: one accounts file serves every seed.
    assert {(j.user, j.account) for j in jobs} == {
        ("user1", "physics"), ("user2", "chemistry"), ("user3", "physics"),
        ("user4", "chemistry"), ("user5", "physics"), ("user6", "chemistry"),
    }  # fmt: skip
    parts = Counter(j.partition for j in jobs)
    assert set(parts) == {"batch", "long"} and 0.70 < parts["batch"] / n < 0.80
    assert set(Counter(j.qos for j in jobs)) == {"normal", "high"}
    assert {j.nodes for j in jobs} == {1, 4} and all(j.ntasks == 2 * j.nodes for j in jobs)
    assert {j.mem_mb for j in jobs} == {1024, 2048}
    licensed = Counter(j.licenses for j in jobs if j.licenses)
    assert set(licensed) == {"power:full_node", "flat:2"} and 0.26 < sum(licensed.values()) / n < 0.34
    over = [j for j in jobs if j.run_time > j.time_limit * 60]
    assert 0.08 < len(over) / n < 0.12
    assert 0.03 < sum(1 for j in jobs if j.exit_code == 1) / n < 0.07
    deps = [j for j in jobs if j.dependency]
    assert deps and all(int(j.dependency.removeprefix("afterok:")) < j.job_id for j in deps)
    # Poisson arrivals at 360 an hour: 10 s apart on average.
    gaps = [b.submit - a.submit for a, b in itertools.pairwise(jobs)]
    assert 9.0 < statistics.mean(gaps) < 11.0
    # The run time's median is the lognormal's, among the jobs that keep within their limit.
    within = [j.run_time for j in jobs if j.run_time <= j.time_limit * 60]
    assert 540 < statistics.median(within) < 660
    assert all(j.time_limit * 60 >= j.run_time * 1.0 for j in jobs if j not in over)


def test_run_time_distributions(tmp_path):
    for spec, check in (
        ("fixed:1:00:00", lambda ts: set(ts) == {3600.0}),
        ("uniform:60:120", lambda ts: min(ts) >= 60 and max(ts) <= 120),
        ("exponential:300", lambda ts: 250 < statistics.mean(ts) < 350),
    ):
        out = gen(tmp_path, "--jobs", "1000", "--limit-share", "0", "--run-time", spec, name="d.json")
        assert check([j.run_time for j in read_workload(out)]), spec


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], "argument --jobs: '0' is not a whole number of 1 or more"),
        (["--jobs", "5", "--sizes", "a:1"], "--sizes: 'a:1': not a whole number of 1 or more"),
        (["--jobs", "5", "--sizes", "1:0"], "--sizes: '1:0' names nothing to choose"),
        (["--jobs", "5", "--mem", "4Q"], "--mem: '4Q': Invalid memory specification"),
        (["--jobs", "5", "--run-time", "normal:5"], "--run-time: 'normal:5': give one of lognormal"),
        (["--jobs", "5", "--run-time", "uniform:9:1"], "--run-time: 'uniform:9:1': MIN is more than MAX"),
        (["--jobs", "5", "--hres-share", "1.5"], "argument --hres-share: '1.5' is not a share from 0 to 1"),
        (["--jobs", "5", "--arrival-rate", "0"], "--arrival-rate: a number of jobs per hour, more than 0"),
        (["--jobs", "5", "--hres", ""], "--hres: name at least one request"),
    ],
)
def test_bad_options_are_refused_by_name(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as info:
        main(["--out", str(tmp_path / "x.yaml"), *args])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


def test_an_unwritable_output_is_an_error(tmp_path, capsys):
    assert main(["--jobs", "2", "--out", str(tmp_path / "no" / "such" / "dir.yaml")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_the_yaml_example_is_what_its_command_writes(tmp_path):
    """examples/workloads/sample.yaml says how it was made; made again, it is the same."""
    example = REPO / "examples/workloads/sample.yaml"
    command = next(
        line for line in example.read_text().splitlines() if "simulator.workloads.generate" in line
    )
    argv = shlex.split(command.lstrip("# "))
    argv = argv[argv.index("simulator.workloads.generate") + 1 :]
    argv[argv.index("--out") + 1] = str(tmp_path / "again.yaml")
    assert main(argv) == 0
    body = "".join(line + "\n" for line in example.read_text().splitlines() if not line.startswith("#"))
    assert (tmp_path / "again.yaml").read_text() == body
