"""Fixtures of the agent's tests (the harness itself is tests/agent/harness.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty working directory for jobs."""
    d = tmp_path / "work"
    d.mkdir()
    return d
