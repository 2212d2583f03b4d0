"""The power-save cycle reads only the nodes that can take part in a decision
(power.cycle_input): a simulation writes, line for line, the log it writes when every
cycle reads every node and every holding job, as the cycle did before. On the shipped
sample (examples/workloads/sample.swf on examples/simulate/conf, its first 2,200 s) and a
generated workload that powers cloud nodes up and down."""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command

from cluster.models import Node
from power import cycle_input, services
from simulator.engine import Engine
from simulator.workloads import generate, read_workload

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "examples/simulate/conf"


def _every_node(power, *, now, loaded, auto, exclusions):
    """The cycle's read before power.cycle_input: every node, locked, every holding job."""
    nodes = Node.objects.select_for_update().order_by("name")
    return {n.name: cycle_input.power_row(n) for n in nodes}, services._holding_jobs()


def _log(jobs, out: Path, until: float) -> list[str]:
    Engine(conf_dir=CONF, jobs=jobs, out_dir=out, workload_name="oracle", until=until).run()
    lines = (out / "events.jsonl").read_text().splitlines()
    assert '"event":"done"' in lines[-1]
    # The last line says how long the run took on the wall clock.
    return lines[:-1]


def _both(jobs, tmp_path: Path, monkeypatch, until: float) -> tuple[list[str], list[str]]:
    chosen = _log(jobs, tmp_path / "chosen", until)
    call_command("flush", verbosity=0, interactive=False)
    with monkeypatch.context() as patch:
        patch.setattr(services, "_cycle_input", _every_node)
        every = _log(jobs, tmp_path / "every", until)
    return chosen, every


def _power_lines(lines: list[str]) -> int:
    """Node lines of a power up (#) or a power down (%): sinfo's suffixes."""
    return sum('"event":"node"' in line and ('#"' in line or '%"' in line) for line in lines)


def test_the_sample_logs_the_same_as_with_every_node_read(transactional_db, tmp_path, monkeypatch):
    jobs = read_workload(REPO / "examples/workloads/sample.swf", notes=[])
    # Its first 2,200 s: idle nodes power down at 1,800 s, a cloud node powers up at 2,044 s.
    chosen, every = _both(jobs, tmp_path, monkeypatch, until=2200)
    assert _power_lines(every), "the run powers no node: it tests nothing"
    assert chosen == every


def test_a_generated_workload_logs_the_same_as_with_every_node_read(transactional_db, tmp_path, monkeypatch):
    path = tmp_path / "gen.yaml"
    argv = ["--jobs", "20", "--seed", "7", "--partitions", "batch:1,cloud:3", "--arrival-rate", "240"]
    assert generate.main([*argv, "--out", str(path)]) == 0
    chosen, every = _both(read_workload(path), tmp_path, monkeypatch, until=1500)
    assert _power_lines(every), "the run powers no node: it tests nothing"
    assert chosen == every
