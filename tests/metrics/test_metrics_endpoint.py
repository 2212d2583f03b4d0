"""``/metrics``: the figures of a cluster set up by hand, and who may read them (#15 point 6)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Job, Node
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db

TOKEN = "scrape-secret-0123456789"


def parse(text: str) -> dict[tuple[str, frozenset], float]:
    """(sample name, its labels) -> value."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[name, frozenset(labels.items())]


@pytest.fixture
def known_cluster(demo, api, users):
    """node01-04 idle with agent a1, node05 drained, node06 down and not responding, the
    other 26 never registered, cloud[01-04] powered down (the demo's CLOUD nodes).
    alice's account science has GrpTRES=cpu=8 and GrpJobs=3; she runs two jobs of 2 CPUs
    and one 'flat' license each on node01 and node02, and holds a third."""
    Node.objects.filter(name__in=["node01", "node02", "node03", "node04"]).update(
        base_state=NodeBase.IDLE, flags=NodeFlag.NONE, agent_id="a1"
    )
    Node.objects.filter(name="node05").update(base_state=NodeBase.IDLE, flags=NodeFlag.DRAIN, agent_id="a2")
    Node.objects.filter(name="node06").update(
        base_state=NodeBase.DOWN, flags=NodeFlag.NOT_RESPONDING, agent_id="a3"
    )
    admin = api("admin")
    for path, body in (
        ("/api/limits/add/account/", {"names": ["science"], "options": ["GrpTRES=cpu=8", "GrpJobs=3"]}),
        ("/api/limits/add/user/", {"names": ["alice"], "options": ["Account=science"]}),
    ):
        assert admin.post(path, body, format="json").status_code == 200
    spec = {"wrap": "sleep 100", "work_dir": "/tmp", "ntasks": 2, "account": "science", "licenses": "flat:1"}
    running = [
        job_submit(user=users["alice"], spec={**spec, "nodelist": node}).job_ids[0]
        for node in ("node01", "node02")
    ]
    job_submit(user=users["alice"], spec={**spec, "hold": True})
    schedule_pass()
    assert set(Job.objects.filter(state="RUNNING").values_list("id", flat=True)) == set(running)


def test_the_figures_of_a_known_cluster(known_cluster, client):
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain; version=")
    m = parse(answer.content.decode())

    # Nodes per state and per power state: 36 in all.
    assert value(m, "fsched_nodes", state="mixed") == 2  # node01 and node02, 2 of 4 CPUs each
    assert value(m, "fsched_nodes", state="idle") == 2 + 4  # node03-04 and the powered-down cloud nodes
    assert value(m, "fsched_nodes", state="drained") == 1
    assert value(m, "fsched_nodes", state="down") == 1
    assert value(m, "fsched_nodes", state="unknown") == 26
    assert value(m, "fsched_nodes_power", power="powered_down") == 4
    assert value(m, "fsched_nodes_power", power="on") == 32
    assert value(m, "fsched_nodes_not_responding") == 1
    assert value(m, "fsched_agents") == 2  # a1 and a2; a3's node does not respond

    # 36 nodes of 4 CPUs; node[01-24] have 2000 MB, node[25-32] 4000, the cloud nodes 2000.
    assert value(m, "fsched_cpus") == 144 and value(m, "fsched_cpus_allocated") == 4
    assert value(m, "fsched_memory_megabytes") == 24 * 2000 + 8 * 4000 + 4 * 2000

    assert value(m, "fsched_jobs", state="RUNNING") == 2
    assert value(m, "fsched_jobs", state="PENDING") == 1
    assert value(m, "fsched_jobs", state="COMPLETED") == 0
    assert value(m, "fsched_jobs_pending", reason="JobHeldUser") == 1
    assert value(m, "fsched_scheduler_backlog") == 1
    assert value(m, "fsched_scheduler_cycles", scheduler="main") == 0  # schedule_pass alone records none

    # hres (Mode 2): a job's license is charged to every layer over its node.
    assert value(m, "fsched_hres_used", resource="flat", layer="top") == 2
    assert value(m, "fsched_hres_used", resource="flat", layer="mid1") == 2
    assert value(m, "fsched_hres_used", resource="flat", layer="low1") == 2
    assert value(m, "fsched_hres_used", resource="flat", layer="mid2") == 0
    assert value(m, "fsched_hres_total", resource="flat", layer="top") == 24

    # limits: the account's Grp limits and what its running jobs hold against them.
    science = {"account": "science", "user": "", "partition": "", "qos": ""}
    assert value(m, "fsched_limit_value", **science, limit="GrpTRES", tres="cpu") == 8
    assert value(m, "fsched_limit_used", **science, limit="GrpTRES", tres="cpu") == 4
    assert value(m, "fsched_limit_value", **science, limit="GrpJobs", tres="") == 3
    assert value(m, "fsched_limit_used", **science, limit="GrpJobs", tres="") == 2

    # power saving: nothing running, nothing failed.
    assert value(m, "fsched_power_programs_running", program="resume") == 0


def test_a_scrape_is_a_fixed_number_of_queries(known_cluster, client, users):
    with CaptureQueriesContext(connection) as small:
        assert client.get("/metrics").status_code == 200
    Node.objects.filter(name__startswith="node").update(base_state=NodeBase.IDLE, flags=NodeFlag.NONE)
    spec = {"wrap": "true", "work_dir": "/tmp", "account": "science", "hold": True}
    for _ in range(5):
        job_submit(user=users["alice"], spec=spec)
    with CaptureQueriesContext(connection) as larger:
        assert client.get("/metrics").status_code == 200
    assert len(larger) == len(small)


def test_token_and_networks_decide_who_reads_it(known_cluster, client, settings):
    settings.FSCHED_METRICS_TOKEN = TOKEN
    settings.FSCHED_METRICS_ALLOW = ("10.1.0.0/16",)
    # The test client comes from 127.0.0.1: outside the networks, so the token decides.
    refused = client.get("/metrics")
    assert refused.status_code == 403 and b"FSCHED_METRICS_TOKEN" in refused.content
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Token {TOKEN}").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    # A client in the networks needs no token.
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 403
    # No token configured: a bearer of the empty token is no one.
    settings.FSCHED_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403
    # Only reads.
    assert client.post("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 405


def test_the_default_is_loopback_only(known_cluster, client):
    assert client.get("/metrics").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.7").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200


def test_a_mistyped_network_stops_the_settings(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from config.env import envnetworks

    monkeypatch.setenv("FSCHED_METRICS_ALLOW", "10.0.0.0/8,10.0.0/33")
    with pytest.raises(ImproperlyConfigured, match=r"FSCHED_METRICS_ALLOW=.*'10\.0\.0/33' is not a network"):
        envnetworks("FSCHED_METRICS_ALLOW", "")
