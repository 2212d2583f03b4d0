"""srun --cpu-bind read as slurm_verify_cpu_bind reads it (cli/cpu_bind.py), and srun's
refusals."""

from __future__ import annotations

import pytest

from cli import srun
from cli.cpu_bind import CpuBindError, parse


def test_types_units_and_verbosity():
    assert parse("cores") == {"cpu_bind": "cores", "cpu_bind_verbose": False}
    assert parse("verbose,threads") == {"cpu_bind": "threads", "cpu_bind_verbose": True}
    assert parse("v,none") == {"cpu_bind": "none", "cpu_bind_verbose": True}
    assert parse("No") == {"cpu_bind": "none", "cpu_bind_verbose": False}
    assert parse("rank,q") == {"cpu_bind": "rank", "cpu_bind_verbose": False}
    assert parse("verbose") == {"cpu_bind": "", "cpu_bind_verbose": True}


def test_refusals_in_srun_s_words(monkeypatch):
    with pytest.raises(CpuBindError, match='unrecognized --cpu-bind argument "bogus"'):
        parse("cores,bogus")
    with pytest.raises(CpuBindError, match="map_cpu: CPUs named by hand are not supported by fsched"):
        parse("map_cpu:0,1")
    ns = srun.parse(["--cpu-bind=mask_cpu:0x1", "true"])
    assert (
        srun.cpu_binding(ns)
        == "srun: error: --cpu-bind=mask_cpu: CPUs named by hand are not supported by fsched"
    )
    monkeypatch.setenv("SLURM_CPU_BIND", "verbose")
    ns = srun.parse(["true"])
    assert srun.cpu_binding(ns) is None and ns.cpu_binding == {"cpu_bind": "", "cpu_bind_verbose": True}
