"""Shared fixtures for the HRES pure core: the resources.yaml of Slurm's hres.html over
node[01-32]."""

from __future__ import annotations

from pathlib import Path

import pytest

from hres.core.config import HresConfig, load_resources
from hres.core.layers import HresState, build_state

SPEC_FILE = Path(__file__).with_name("spec_resources.yaml")
NODES = tuple(f"node{i:02d}" for i in range(1, 33))


@pytest.fixture
def nodes() -> tuple[str, ...]:
    return NODES


@pytest.fixture
def spec_config() -> HresConfig:
    return load_resources(SPEC_FILE, cluster_nodes=NODES)


@pytest.fixture
def spec_state(spec_config: HresConfig) -> HresState:
    return build_state(spec_config, NODES)
