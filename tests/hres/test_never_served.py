"""A request for hierarchical resources that no layer set could ever serve is refused at
submission with Slurm's message (issue #13 point 2), after Slurm's test_154_1 on the
resources.yaml of hres.html; one that only waits for usage, a disabled layer or a count
lowered at runtime is accepted and pends."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cluster.models import Job
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit, job_update
from cluster.services.scheduling import schedule_pass
from hres import services
from hres.core.feasibility import never_serves
from slurmwords.licenses import LicenseItem

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
NODES = [f"node{i:02d}" for i in range(1, 33)]
UNAVAILABLE = "Requested node configuration is not available"


@pytest.fixture
def hres_conf(tmp_path, settings):
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "examples" / "demo", conf)
    shutil.copy(Path(__file__).with_name("spec_resources.yaml"), conf / "resources.yaml")
    with (conf / "partitions.conf").open("a") as f:
        f.write("PartitionName=all Nodes=node[01-32] MaxTime=60 DefaultTime=10\n")
    settings.CONF_DIR = conf
    config_load(path=conf / "slurm.conf")
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 4000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )
    return conf


def submit(user, **spec) -> int:
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "all", **spec}
    return job_submit(user=user, spec=spec).job_ids[0]


@pytest.mark.parametrize(
    ("spec", "explanation"),
    [
        (
            {"nodes": "4", "nodelist": "node[01-04]", "licenses": "power:10000"},
            "power: 40000 needed on layer rack1, which holds 35000 (40000 - 5000 base)",
        ),
        (
            {"nodes": "11", "licenses": "power:10000"},
            "power: 110000 needed on layer datacenter, which holds 102000 (130000 - 28000 base)",
        ),
        ({"licenses": "flat:25"}, "flat: 25 needed on layer top, which holds 24"),
        (
            {"licenses": "natural:101"},
            "natural: 101 needed on a layer holding node[01-32]; the most is layer low1, which holds 100",
        ),
        (
            {"nodes": "2", "nodelist": "node01", "licenses": "flat:13", "partition": "debug"},
            "flat: 13 needed on layer low1, which holds 12",
        ),
        ({"nodes": "11", "licenses": "power:10000", "array": "0-3"}, None),
    ],
)
def test_a_request_no_layer_set_could_ever_serve_is_refused(hres_conf, users, spec, explanation):
    with pytest.raises(ServiceError) as err:
        submit(users["alice"], **spec)
    assert str(err.value) == UNAVAILABLE
    assert err.value.explanation == (
        explanation or "power: 110000 needed on layer datacenter, which holds 102000 (130000 - 28000 base)"
    )
    assert not Job.objects.exists()


def test_the_api_answers_400_with_slurms_message_and_the_figures(hres_conf, api):
    response = api("alice").post(
        "/api/jobs/",
        {"wrap": "true", "work_dir": "/tmp", "partition": "all", "nodes": "11", "licenses": "power:10000"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": UNAVAILABLE,
        "field": "licenses",
        "explanation": "power: 110000 needed on layer datacenter, which holds 102000 (130000 - 28000 base)",
    }


def test_ten_nodes_spread_over_the_racks_and_run(hres_conf, users):
    job_id = submit(users["alice"], nodes="10", licenses="power:10000")
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == "RUNNING"
    ok = submit(users["alice"], nodes="4", nodelist="node[09-12]", licenses="power:10000")
    assert Job.objects.get(pk=ok).state == "PENDING"


def test_a_job_that_waits_for_usage_is_accepted_and_its_detail_counts_its_own_request(hres_conf, users):
    first = submit(users["alice"], nodes="1", licenses="power:10000")
    schedule_pass()
    assert Job.objects.get(pk=first).state == "RUNNING"
    waiting = submit(users["alice"], nodes="10", licenses="power:10000")
    schedule_pass()
    job = Job.objects.get(pk=waiting)
    assert (job.state, job.reason) == ("PENDING", "Licenses")
    assert "power: 100000 needed on layer datacenter, 92000 free" in job.reason_detail


def test_a_count_lowered_at_runtime_or_a_disabled_layer_only_makes_the_job_wait(hres_conf, users):
    admin = users["admin"]
    services.hres_update(actor=admin, hres_name="power", layer_name="datacenter", count=50000)
    lowered = submit(users["alice"], nodes="10", licenses="power:10000")
    services.hres_update(actor=admin, hres_name="flat", disable_hres="true")
    disabled = submit(users["alice"], licenses="flat:2")
    schedule_pass()
    assert Job.objects.get(pk=lowered).state == "PENDING"
    assert Job.objects.get(pk=disabled).reason == "HRESDisabled"


def test_a_count_raised_at_runtime_lets_the_job_in(hres_conf, users):
    services.hres_update(actor=users["admin"], hres_name="power", layer_name="datacenter", count=140000)
    assert submit(users["alice"], nodes="11", licenses="power:10000")


def test_nodes_that_may_yet_be_created_count_for_modes_1_and_2(spec_state):
    few = ["node01"]
    items = [LicenseItem("flat", 2)]
    assert never_serves([spec_state], items, 2, few) == "flat: 1 of the nodes can have 2, 2 needed"
    assert never_serves([spec_state], items, 2, few, spare=1) is None


def test_test_154_1_on_the_pure_core(spec_state):
    power = [LicenseItem("power", 10000)]
    assert never_serves([spec_state], power, 10, NODES) is None
    assert never_serves([spec_state], power, 4, NODES, required=NODES[8:12]) is None
    assert never_serves([spec_state], power, 4, NODES, required=NODES[:4]) == (
        "power: 40000 needed on layer rack1, which holds 35000 (40000 - 5000 base)"
    )
    # Refused only when no state could serve it: the configured one may, after a runtime change.
    assert never_serves([spec_state], power, 11, NODES) is not None


def test_licenses_no_layer_set_could_ever_serve_are_refused_in_an_update_too(hres_conf, users):
    """scontrol update JobId=N Licenses= is checked as a submission is (the licenses of a
    pending job; this refusal and the licenses update came in separately)."""
    job_id = submit(users["alice"], nodes="11", licenses="power:1000")
    with pytest.raises(ServiceError) as err:
        job_update(actor=users["alice"], job_id=job_id, changes={"licenses": "power:10000"})
    assert (str(err.value), err.value.explanation) == (
        UNAVAILABLE,
        "power: 110000 needed on layer datacenter, which holds 102000 (130000 - 28000 base)",
    )
    assert Job.objects.get(pk=job_id).licenses == "power:1000"
