"""The workload readers' error: which file, which line, which field, and what is wrong."""

from __future__ import annotations

from pathlib import Path


class WorkloadError(ValueError):
    """A workload file that cannot be read; ``str()`` is ``file:line: field: message``."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")
