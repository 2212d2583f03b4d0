"""srun's side of a step's output (pure but for the streams it writes to).

Each task's bytes are written in the order they arrived; with ``-l/--label`` each line is
prefixed with the task id as srun does (``0: ``, right-aligned to the width of the highest
id: `` 0: `` .. ``10: `` for 11 tasks), a partial line waiting for its end. The exits are
summed up as srun reports them, per node and exit status.
"""

from __future__ import annotations

import signal as signals
from collections.abc import Iterable
from typing import BinaryIO

from slurmwords import step_layout


class TaskOutput:
    def __init__(self, out: BinaryIO, err: BinaryIO, *, ntasks: int, label: bool) -> None:
        self.streams = {False: out, True: err}
        self.label = label
        self.width = step_layout.label_width(ntasks)
        self._partial: dict[tuple[int, bool], bytes] = {}

    def write(self, task: int, data: bytes, *, err: bool) -> None:
        stream = self.streams[err]
        if not self.label:
            stream.write(data)
            stream.flush()
            return
        key = (task, err)
        text = self._partial.pop(key, b"") + data
        lines = text.split(b"\n")
        rest = lines.pop()
        if lines:
            prefix = step_layout.label(task, self.width)
            stream.write(b"".join(prefix + line + b"\n" for line in lines))
            stream.flush()
        if rest:
            self._partial[key] = rest

    def task_ended(self, task: int) -> None:
        """A task's last partial lines, labelled, once it can write no more."""
        for err in (False, True):
            rest = self._partial.pop((task, err), b"")
            if rest:
                self.streams[err].write(step_layout.label(task, self.width) + rest + b"\n")
                self.streams[err].flush()


def exit_status(exits: Iterable[tuple[int, int]]) -> int:
    """srun's own exit status: the highest task exit code, a signal counting as 128+sig."""
    return max((128 + sig if sig else code for code, sig in exits), default=0)


def describe(code: int, sig: int) -> str:
    if sig:
        try:
            return signals.strsignal(sig) or f"Signal {sig}"
        except ValueError:
            return f"Signal {sig}"
    return f"Exited with exit code {code}"


def exit_report(by_node: dict[str, dict[int, tuple[int, int]]]) -> list[str]:
    """srun's ``error: node01: tasks 0-1: Exited with exit code 3`` lines, for the tasks
    that did not exit 0, grouped per node and status."""
    lines: list[str] = []
    for node, tasks in by_node.items():
        groups: dict[tuple[int, int], list[int]] = {}
        for task, status in tasks.items():
            if status != (0, 0):
                groups.setdefault(status, []).append(task)
        for (code, sig), ids in groups.items():
            which = "task" if len(ids) == 1 else "tasks"
            lines.append(f"srun: error: {node}: {which} {step_layout.task_range(ids)}: {describe(code, sig)}")
    return lines


def status_lines(step: str, ntasks: int, exits: dict[int, tuple[int, int]]) -> list[str]:
    """What srun prints on its first Ctrl-C: each group of tasks and its state."""
    groups: dict[str, list[int]] = {}
    for task in range(ntasks):
        status = exits.get(task)
        state = "running" if status is None else "exited" if status == (0, 0) else "exited abnormally"
        groups.setdefault(state, []).append(task)
    out = []
    for state, ids in groups.items():
        which = "task" if len(ids) == 1 else "tasks"
        out.append(f"srun: StepId={step} {which} {step_layout.task_range(ids)}: {state}")
    return out
