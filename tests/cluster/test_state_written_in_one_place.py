"""A job's or a node's state is written by cluster/services/state.py only (docs/architecture.md):
a service that set ``job.state`` itself would skip the event, the usage refresh or the
agent's command that the primitives do with it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATE_FIELDS = {"job": {"state"}, "node": {"base_state", "flags"}}
THE_ONE_PLACE = ROOT / "cluster" / "services" / "state.py"


def _controller_modules() -> list[Path]:
    found = []
    for package in ("cluster", "hres", "limits", "power", "config"):
        for path in (ROOT / package).rglob("*.py"):
            # The pure cores decide on plain records, never on rows; migrations are history.
            if "core" in path.parts or "migrations" in path.parts or path == THE_ONE_PLACE:
                continue
            found.append(path)
    return found


def _state_writes(path: Path, root: Path = ROOT) -> list[str]:
    writes = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.attr in STATE_FIELDS.get(target.value.id, ())
            ):
                writes.append(f"{path.relative_to(root)}:{node.lineno} {target.value.id}.{target.attr}")
    return writes


def test_no_module_but_the_state_primitives_writes_a_job_or_node_state():
    writes = [w for path in _controller_modules() for w in _state_writes(path)]
    assert writes == []


def test_the_scan_sees_a_write_where_there_is_one(tmp_path):
    sample = tmp_path / "service.py"
    sample.write_text("def f(job, node):\n    job.state = 'RUNNING'\n    node.flags |= 4\n")
    assert _state_writes(sample, tmp_path) == ["service.py:2 job.state", "service.py:3 node.flags"]
