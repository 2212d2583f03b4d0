"""HRES in the controller, through the services and the REST API: resources.yaml loaded
with slurm.conf, requests checked at submission, charges stored and released, the
license view, runtime updates (rules, permission, audit) and HRESDisabled."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from django.utils import timezone

from cluster.models import Event, Job
from cluster.services import agents
from cluster.services.configuration import config_load
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from hres import services
from hres.models import LayerUpdate, ResourcesFile

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = Path(__file__).with_name("spec_resources.yaml")
NODES = [f"node{i:02d}" for i in range(1, 33)]


@pytest.fixture
def hres_conf(tmp_path, settings):
    """The demo configuration plus the resources.yaml of Slurm's hres.html and a partition
    over all nodes."""
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "examples" / "demo", conf)
    shutil.copy(SPEC_FILE, conf / "resources.yaml")
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


def finish(job_id: int) -> None:
    job = Job.objects.get(pk=job_id)
    agents.job_completed(
        completion={
            "job_id": job.id,
            "node": job.batch_host,
            "exit_code": 0,
            "signal": 0,
            "end_time": timezone.now().timestamp(),
        }
    )


def entry(resource: str, layer: str) -> dict:
    return next(e for e in services.license_entries(resource) if e.get("layer_name") == layer)


# --------------------------------------------------------------------------- configuration


def test_resources_yaml_is_loaded_with_slurm_conf(hres_conf):
    assert set(services.current_config().names) == {"flat", "natural", "power"}
    assert ResourcesFile.current().path.endswith("resources.yaml")
    power = entry("power", "rack1")
    assert (power["total"], power["conf_total"], power["base_usage"]) == (35000, 40000, 5000)


def test_a_bad_resources_yaml_refuses_the_reconfigure_and_keeps_the_running_one(hres_conf):
    version = ResourcesFile.current().version
    text = (hres_conf / "resources.yaml").read_text().replace("count: 24", "count: -2", 1)
    (hres_conf / "resources.yaml").write_text(text)
    (hres_conf / "slurm.conf").write_text(
        (hres_conf / "slurm.conf").read_text().replace("KillWait=5", "KillWait=7")
    )
    with pytest.raises(ServiceError) as err:
        config_load(path=hres_conf / "slurm.conf")
    assert "resources.yaml:" in str(err.value) and "count" in str(err.value)
    assert ResourcesFile.current().version == version
    from cluster.models import ClusterConfig

    assert ClusterConfig.current().options["KillWait"] == 5  # slurm.conf not applied either
    assert entry("flat", "top")["conf_total"] == 24


def test_an_hres_name_may_not_reuse_a_cluster_license(hres_conf):
    conf = hres_conf / "slurm.conf"
    conf.write_text(conf.read_text().replace("Licenses=fluent:30", "Licenses=flat:3,fluent:30"))
    with pytest.raises(ServiceError, match="flat"):
        config_load(path=conf)


def test_resources_file_option_names_the_file(hres_conf):
    shutil.move(hres_conf / "resources.yaml", hres_conf / "hres.yaml")
    conf = hres_conf / "slurm.conf"
    conf.write_text(conf.read_text() + "\nResourcesFile=hres.yaml\n")
    config_load(path=conf)
    assert ResourcesFile.current().path.endswith("hres.yaml")
    conf.write_text(conf.read_text().replace("hres.yaml", "missing.yaml"))
    with pytest.raises(ServiceError, match=r"missing\.yaml"):
        config_load(path=conf)


# --------------------------------------------------------------------------- submission


@pytest.mark.parametrize(
    ("licenses", "message"),
    [
        ("flat:2|natural:1", "cannot be requested with the | form"),
        ("natural:1[a=b,a=c]", "plugin argument a given twice"),
        ("flat:0", "at least 1"),
        ("fluent:1[a=b]", "only allowed on a hierarchical resource"),
        ("nosuch:1", "unknown license nosuch"),
        ("fluent:31", "only 30 configured"),
        ("flat:1,flat:2", "requested twice"),
        ("qpu:1[mode=fast]", "only allowed on a hierarchical resource"),
    ],
)
def test_bad_license_requests_are_refused_at_submission(hres_conf, users, licenses, message):
    with pytest.raises(ServiceError, match=re.escape(message)):
        submit(users["alice"], licenses=licenses)
    assert not Job.objects.exists()


def test_the_either_form_of_plain_licenses_takes_the_first_free_one(hres_conf, users):
    first = submit(users["alice"], licenses="ansys:10")
    second = submit(users["alice"], licenses="ansys:1|fluent:2")
    schedule_pass()
    assert Job.objects.get(pk=first).licenses_alloc == "ansys:10"
    assert Job.objects.get(pk=second).licenses_alloc == "fluent:2"
    fluent = next(e for e in services.license_entries("fluent"))
    assert (fluent["used"], fluent["free"]) == (2, 28)


# --------------------------------------------------------------------------- scheduling


def test_jobs_are_charged_the_spec_way_and_release_exactly_that(hres_conf, users, api):
    flat = submit(users["alice"], licenses="flat:2,natural:1", nodes="4", nodelist="node[01-04]")
    power = submit(users["alice"], licenses="power:1000", nodes="16", nodelist="node[01-16]")
    schedule_pass()
    assert Job.objects.get(pk=flat).licenses_alloc == "flat(low1*2,mid1*2,top*2):2,natural(low1*1):1"
    assert (
        Job.objects.get(pk=power).licenses_alloc
        == "power(rack1*8000,rack2*8000,row1*16000,datacenter*16000):1000"
    )
    assert entry("power", "row1")["used"] == 16000
    assert entry("flat", "top")["used"] == 2
    shown = api("alice").get(f"/api/jobs/{power}/").json()
    assert shown["licenses"] == "power:1000"
    assert shown["licenses_alloc"].startswith("power(rack1*8000,")
    # The layer changes under the running job; it still releases what it took.
    services.hres_update(actor=users["admin"], hres_name="power", layer_name="rack2", nodes="-node[09-12]")
    finish(power)
    assert entry("power", "row1")["used"] == 0
    assert entry("power", "datacenter")["used"] == 0
    finish(flat)
    assert entry("flat", "top")["used"] == 0


def test_a_job_that_the_layers_cannot_serve_pends_naming_the_layer(hres_conf, users):
    big = submit(users["alice"], licenses="flat:12", nodes="1", nodelist="node01")
    schedule_pass()
    assert Job.objects.get(pk=big).state == "RUNNING"
    waiting = submit(users["alice"], licenses="flat:1", nodes="1", nodelist="node02")
    schedule_pass()
    job = Job.objects.get(pk=waiting)
    assert (job.state, job.reason) == ("PENDING", "Licenses")
    assert "layer low1" in job.reason_detail


def test_disabled_resource_pends_with_hres_disabled_until_enabled(hres_conf, users):
    services.hres_update(actor=users["admin"], hres_name="natural", disable_hres="true")
    job_id = submit(users["alice"], licenses="natural:1")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.reason) == ("PENDING", "HRESDisabled")
    services.hres_update(actor=users["admin"], hres_name="natural", disable_hres=False)
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == "RUNNING"


def test_a_disabled_layer_sends_jobs_to_the_other_layers(hres_conf, users):
    services.hres_update(actor=users["admin"], hres_name="natural", layer_name="low1", disable_layer=True)
    job_id = submit(users["alice"], licenses="natural:1", nodes="1")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    assert job.licenses_alloc in ("natural(low2*1):1", "natural(top*1):1")


def test_an_empty_mode1_layer_does_not_hide_hresdisabled(hres_conf, users):
    admin = users["admin"]
    services.hres_update(actor=admin, hres_name="natural", layer_name="top", count=0)
    services.hres_update(actor=admin, hres_name="natural", layer_name="low1", disable_layer=True)
    job_id = submit(users["alice"], licenses="natural:1", nodes="1", nodelist="node01")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.reason) == ("PENDING", "HRESDisabled")


# --------------------------------------------------------------------------- runtime updates


def test_update_via_rest_is_staff_only_audited_and_replayed(hres_conf, api):
    body = {"hres_name": "power", "layer_name": "rack2", "nodes": "-node[15-16]", "count": 45000}
    answer = api("alice").post("/slurm/v0.0.46/hres/", body, format="json")
    assert answer.status_code == 403
    assert api(None).post("/slurm/v0.0.46/hres/", body, format="json").status_code == 401
    answer = api("admin").post("/slurm/v0.0.46/hres/", body, format="json")
    assert answer.status_code == 200, answer.json()
    rack2 = entry("power", "rack2")
    assert (rack2["conf_total"], rack2["nodes"]) == (45000, "node[09-14]")
    assert entry("power", "row1")["nodes"] == "node[01-14]"  # propagated to the ancestors
    event = Event.objects.filter(kind="config", reason="hres update").get()
    assert event.user == "admin"
    assert event.detail["before"]["conf_total"] == 40000 and event.detail["after"]["conf_total"] == 45000
    # A reconfigure reads resources.yaml again: the change is gone.
    config_load(path=hres_conf / "slurm.conf")
    assert entry("power", "rack2")["conf_total"] == 40000
    assert not LayerUpdate.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"hres_name": "nosuch", "layer_name": "x", "count": 1}, "no hierarchical resource nosuch"),
        ({"hres_name": "power", "layer_name": "nosuch", "count": 1}, "has no layer nosuch"),
        ({"hres_name": "power", "layer_name": "row1", "nodes": "node01"}, "leaf layers"),
        ({"hres_name": "power", "layer_name": "rack1", "count": 4000}, "BaseUsage"),
        ({"hres_name": "power", "layer_name": "rack1", "nodes": "+node99"}, "not in the cluster"),
        ({"hres_name": "power", "layer_name": "rack1", "nodes": "+node09"}, "already in leaf layer rack2"),
        ({"hres_name": "power", "disable_hres": "yes"}, "true or false"),
        ({"hres_name": "power", "layer_name": "rack1", "disable_layer": 1}, "true or false"),
        ({"hres_name": "power", "count": 5}, "LayerName is needed"),
        ({"hres_name": "power", "layer_name": "rack1"}, "No changes specified"),
        ({"hres_name": "power", "layer_name": "rack1", "base": "storage"}, "name:value"),
        ({"hres_name": "power", "layer_name": "rack1", "count": "many"}, "Count"),
        ({"hres_name": "power", "layer_name": "rack1", "colour": "red"}, "Unknown field"),
    ],
)
def test_bad_updates_are_refused_and_change_nothing(hres_conf, api, body, message):
    before = services.license_entries()
    answer = api("admin").post("/slurm/v0.0.46/hres/", body, format="json")
    assert answer.status_code == 400
    assert message in answer.json()["error"]
    assert services.license_entries() == before
    assert not LayerUpdate.objects.exists()


def test_base_replaces_the_list_and_empty_clears_it(hres_conf, users):
    services.hres_update(actor=users["admin"], hres_name="power", layer_name="rack1", base="")
    rack1 = entry("power", "rack1")
    assert (rack1["base"], rack1["base_usage"], rack1["total"]) == ([], 0, 40000)
    assert entry("power", "row1")["base_usage"] == 3000
    services.hres_update(actor=users["admin"], hres_name="power", layer_name="rack1", base="a:10,b:20")
    assert entry("power", "rack1")["base"] == [{"name": "a", "value": 10}, {"name": "b", "value": 20}]


def test_users_may_not_update(hres_conf, users):
    with pytest.raises(PermissionDenied):
        services.hres_update(actor=users["alice"], hres_name="power", disable_hres=True)


def test_license_api_lists_plain_licenses_and_layers(hres_conf, api):
    answer = api("alice").get("/api/licenses/").json()["licenses"]
    names = [(e["license_name"], e.get("layer_name")) for e in answer]
    assert names[:3] == [("fluent", None), ("ansys", None), ("matlab", None)]
    assert ("power", "datacenter") in names and len(names) == 3 + 7 + 3 + 7
    assert api("alice").get("/api/licenses/?name=nosuch").status_code == 404
