"""The shipped samples (#18 point 2): examples/workloads/ read without error and fit the
configuration of examples/simulate/conf/, which the live controller's own parsers accept
(slurm.conf with power saving on, resources.yaml, the sacctmgr dump)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.core.slurmconf import load_slurm_conf
from hres.core.config import load_resources
from power.core.config import auto_enabled_at_load, power_config
from simulator.workloads import read_workload
from slurmwords.licenses import parse_license_request

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "examples/simulate/conf"
SWF = REPO / "examples/workloads/sample.swf"
YAML = REPO / "examples/workloads/sample.yaml"


def test_the_swf_sample_is_real_swf_of_a_few_hundred_jobs():
    lines = SWF.read_text().splitlines()
    data = [line for line in lines if not line.startswith(";")]
    assert 200 <= len(data) <= 1000 and all(len(line.split()) == 18 for line in data)
    header = {line[1:].partition(":")[0].strip() for line in lines if line.startswith(";")}
    assert {"Version", "MaxNodes", "MaxProcs", "UnixStartTime", "Partitions"} <= header
    notes: list[str] = []
    jobs = read_workload(SWF, notes=notes)
    assert len(jobs) + sum(" left out: " in n for n in notes) == len(data)
    assert any(j.exit_code == 1 for j in jobs) and any(j.dependency for j in jobs)


def test_the_samples_fit_the_example_configuration():
    conf = load_slurm_conf(CONF / "slurm.conf")
    partitions = {p.name: p for p in conf.partitions}
    cpus = {n.name: n.cpus for n in conf.nodes}
    hres = load_resources(CONF / "resources.yaml", cluster_nodes=list(cpus), cluster_licenses=conf.licenses)
    # Every node is under each resource's layers: a job of any partition may ask for any.
    for resource in hres.resources:
        assert set().union(*(layer.nodes for layer in resource.layers)) == set(cpus), resource.name
    accounts = (CONF / "accounts.cfg").read_text()
    swf_jobs = read_workload(SWF, notes=[])
    yaml_jobs = read_workload(YAML)
    assert len(yaml_jobs) == 200 and any(j.licenses for j in yaml_jobs)
    for job in swf_jobs + yaml_jobs:
        assert job.partition in partitions, job
        assert f"User - '{job.user}'" in accounts, job
        nodes = partitions[job.partition].nodes
        assert job.nodes <= len(nodes) and job.ntasks <= sum(cpus[n] for n in nodes), job
        if job.account:
            assert f"Account - '{job.account}'" in accounts
        if job.licenses:
            parse_license_request(job.licenses, hres=hres.modes(), plain=set(conf.licenses), variables={
                "power": {"full_node": 1000}
            })  # fmt: skip


def test_the_example_configuration_has_power_saving_on():
    power = power_config(load_slurm_conf(CONF / "slurm.conf"))
    assert auto_enabled_at_load(power) and power.suspend_time == 1800
    assert power.partitions["cloud"].suspend_time == 300


@pytest.mark.django_db
def test_the_accounts_file_is_what_sacctmgr_dump_writes(users, slurm_defaults_db):
    """Loaded with ``sacctmgr load`` and dumped again, it comes back line for line."""
    from limits.dump import dump_text, load_text

    text = (CONF / "accounts.cfg").read_text()
    load_text(actor=users["admin"], text=text)
    assert dump_text(cluster="sim") == text


@pytest.fixture
def slurm_defaults_db(db):
    """The rows the limits' data migration makes (the normal QOS, root), should an
    earlier transactional test have flushed them."""
    import importlib

    from django.apps import apps

    importlib.import_module("limits.migrations.0002_defaults").forwards(apps, None)
