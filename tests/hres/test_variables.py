"""HRES variables and ``--resources`` at submission (Slurm's hres.html, resources.yaml's
``variables``): ``-L power:full_node`` asks for the variable's value, shown resolved in
``Licenses=`` and ``LicensesAlloc``; ``--resources`` takes the same grammar, HRES only."""

from __future__ import annotations

import re

import pytest

from cli import sbatch
from cli.scontrol import job_record, render_record
from cluster.models import Job
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit, job_update
from cluster.services.scheduling import schedule_pass
from tests.hres.test_services import hres_conf, submit  # noqa: F401 - the demo cluster with resources.yaml

pytestmark = pytest.mark.django_db


def _show(job_id: int, api) -> str:
    """``scontrol show job`` of the job, as the CLI prints it."""
    data = api("admin").get(f"/api/jobs/{job_id}/").json()
    return render_record(job_record(data))


def test_a_variable_is_the_amount_per_node_in_mode3_shown_resolved(hres_conf, users, api):  # noqa: F811
    job_id = submit(users["alice"], licenses="power:full_gpu_node", nodes="2", nodelist="node[01-02]")
    assert Job.objects.get(pk=job_id).licenses == "power:2000"
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    assert job.licenses_alloc == "power(rack1*4000,row1*4000,datacenter*4000):2000"
    shown = _show(job_id, api)
    assert "Licenses=power:2000" in shown and "full_gpu_node" not in shown


def test_a_variable_is_the_count_in_modes_1_and_2(hres_conf, users):  # noqa: F811
    # resources.yaml of the demo: only power has variables, so give flat one.
    text = (hres_conf / "resources.yaml").read_text()
    text = text.replace(
        "  mode: MODE_2\n", "  mode: MODE_2\n  variables:\n    - name: dozen\n      value: 12\n", 1
    )
    (hres_conf / "resources.yaml").write_text(text)
    config_load(path=hres_conf / "slurm.conf")
    job_id = submit(users["alice"], licenses="flat:dozen", nodelist="node01")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.licenses, job.state) == ("flat:12", "RUNNING")
    assert job.licenses_alloc == "flat(low1*12,mid1*12,top*12):12"


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"licenses": "power:half_node"}, "licenses", "power has no variable half_node"),
        ({"licenses": "flat:full_node"}, "licenses", "flat has no variable full_node"),
        ({"licenses": "fluent:full_node"}, "licenses", "the count must be a number"),
        ({"resources": "fluent:2"}, "resources", "fluent is not a hierarchical resource"),
        ({"resources": "power:full"}, "resources", "power has no variable full"),
        ({"licenses": "power:1", "resources": "power:full_node"}, "resources", "power requested twice"),
        ({"licenses": "fluent|ansys", "resources": "flat:1"}, "resources", "cannot be requested with the |"),
    ],
)
def test_an_unknown_variable_or_a_license_in_resources_is_refused(hres_conf, users, spec, field, message):  # noqa: F811
    before = Job.objects.count()
    with pytest.raises(ServiceError, match=re.escape(message)) as exc:
        job_submit(user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "partition": "all", **spec})
    assert exc.value.field == field
    assert Job.objects.count() == before


def test_resources_option_requests_hierarchical_resources(hres_conf, users):  # noqa: F811
    job_id = submit(
        users["alice"], licenses="fluent:2", resources="power:full_node,natural:3", nodelist="node03"
    )
    assert Job.objects.get(pk=job_id).licenses == "fluent:2,power:1000,natural:3"
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    assert job.licenses_alloc == "power(rack1*1000,row1*1000,datacenter*1000):1000,natural(low1*3):3,fluent:2"


def test_a_license_update_resolves_variables_too(hres_conf, users):  # noqa: F811
    job_id = submit(users["alice"], licenses="flat:1", hold=True)
    assert job_update(
        actor=users["alice"], job_id=job_id, changes={"licenses": "power:full_node"}
    ).licenses == ("power:1000")
    with pytest.raises(ServiceError, match="power has no variable nope"):
        job_update(actor=users["alice"], job_id=job_id, changes={"licenses": "power:nope"})


def test_sbatch_sends_resources_as_its_own_field():
    opts = sbatch.merge_options(
        sbatch._namespace_dict(
            sbatch.build_parser().parse_args(["--resources=power:full_node", "-L", "a:1"])
        ),
        {},
        {},
    )
    body = sbatch.build_request(
        opts, script="#!/bin/sh\n", script_name="s", script_args=[], environ={}, cwd="/"
    )
    assert (body["resources"], body["licenses"]) == ("power:full_node", "a:1")
    fast = sbatch.parse_args(["--resources", "power:2", "s.sh"])
    assert fast.resources == "power:2"
