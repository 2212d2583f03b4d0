"""Changeable node features (Slurm's power_save.html, "Node Features"): helpers.conf,
available vs active, activation at allocation, reset at power down, and scontrol update
of both lists."""

from __future__ import annotations

import textwrap
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from cluster.core.scheduler import parse_constraint
from cluster.core.slurmconf import ConfigError, parse_slurm_conf_text
from cluster.core.states import NodeFlag
from cluster.models import ClusterConfig, Job, Node
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from cluster.services.nodes import node_update
from cluster.services.scheduling import schedule_pass
from power import services
from power.core.features import (
    active_at_allocation,
    active_at_load,
    constraint_features,
    load_node_features,
    reported_features_ok,
)

HEAD = "ClusterName=test\nSlurmctldHost=ctl\nNodeFeaturesPlugins=node_features/helpers\n"
NODES = (
    "NodeName=cloud[1-5] CPUs=4 State=CLOUD Feature=f1,f2,l1\nNodeName=cloud[6-10] CPUs=4 Feature=f3,f4,l2\n"
)
HELPERS = """\
NodeName=cloud[1-5] Feature=f1,f2 Helper=/bin/true
NodeName=cloud[6-10] Feature=f3,f4 Helper=/bin/true
"""


def load(tmp_path: Path, helpers: str | None, head: str = HEAD):
    if helpers is not None:
        (tmp_path / "helpers.conf").write_text(textwrap.dedent(helpers))
    conf = parse_slurm_conf_text(head + NODES, filename=str(tmp_path / "slurm.conf"))
    return load_node_features(conf)


def fs(text: str) -> frozenset[str]:
    return frozenset(text.split(",")) if text else frozenset()


# --------------------------------------------------------------------------- pure core


def test_the_spec_example_makes_f1_to_f4_changeable(tmp_path):
    nf = load(tmp_path, HELPERS)
    assert nf.changeable("cloud3") == fs("f1,f2") and nf.changeable("cloud7") == fs("f3,f4")
    assert [line.source for line in nf.lines] == ["helpers.conf:1", "helpers.conf:2"]


def test_no_plugin_means_no_changeable_features(tmp_path):
    assert load(tmp_path, None, head="ClusterName=test\nSlurmctldHost=ctl\n") is None


def test_helpers_conf_problems_are_all_reported_with_file_and_line(tmp_path):
    bad = """\
        NodeName=cloud[1-5] Feature=f1 Helper=/bin/true
        NodeName=cloud[4-5] Feature=f1 Helper=/bin/true
        NodeName=nope[1-2] Feature=x Helper=/bin/true
        Feature=g Helper=relative/path
        NodeName=cloud6 Helper=/bin/true
        BootTime=soon
        Colour=blue
        """
    with pytest.raises(ConfigError) as err:
        load(tmp_path, bad)
    text = str(err.value)
    assert "helpers.conf:2: feature f1 of cloud4 already has a helper (helpers.conf:1)" in text
    assert "helpers.conf:3: NodeName=nope[1-2]: nodes not in slurm.conf: nope1,nope2" in text
    assert "helpers.conf:4: Helper=relative/path: must be an absolute path" in text
    assert "helpers.conf:5: Feature= is required" in text
    assert "helpers.conf:6: BootTime=soon: not a number of seconds" in text
    assert "helpers.conf:7: unknown key Colour" in text


def test_a_missing_helpers_conf_or_unknown_plugin_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"helpers\.conf: cannot read"):
        load(tmp_path, None)
    head = "ClusterName=test\nSlurmctldHost=ctl\nNodeFeaturesPlugins=node_features/knl_generic\n"
    with pytest.raises(ConfigError, match=r"slurm\.conf:3: NodeFeaturesPlugins: unsupported plugin"):
        load(tmp_path, HELPERS, head=head)


def test_available_vs_active_rules():
    avail, change = fs("f1,f2,l1"), fs("f1,f2")
    down = active_at_load(avail, avail, change, powered_down=True)
    assert down == fs("l1")
    # --constraint sees available features on a powered-down node, active ones otherwise.
    assert constraint_features(avail, down, powered_down=True) == avail
    assert constraint_features(avail, down, powered_down=False) == fs("l1")
    # At allocation the first satisfiable alternative's changeable features become active.
    assert active_at_allocation(parse_constraint("f3|f2&l1"), avail, down, change) == fs("f2,l1")
    assert active_at_allocation(parse_constraint("l1|f1"), avail, down, change) == down
    assert active_at_allocation((), avail, down, change) == down
    # A powered-up node keeps the changeable features it had; a reported list must cover them.
    assert active_at_load(avail, fs("f1,l1"), change, powered_down=False) == fs("f1,l1")
    assert reported_features_ok(fs("f1,l1"), fs("f1,l1"), change)
    assert not reported_features_ok(fs("l1"), fs("f1,l1"), change)
    assert reported_features_ok(frozenset(), fs("f1,l1"), change)  # Helper=/bin/true


# --------------------------------------------------------------------------- controller

DEMO_HELPERS = "NodeName=cloud[01-04] Feature=cloud,img_a,img_b Helper=/bin/true\n"


@pytest.fixture
def feature_conf(conf_dir: Path, settings, db):
    """The demo with cloud[01-04] having two boot images as changeable features."""
    settings.CONF_DIR = conf_dir
    text = (conf_dir / "slurm.conf").read_text()
    text = text.replace("Feature=cloud State=CLOUD", "Feature=cloud,img_a,img_b State=CLOUD")
    text = text.replace('Program="/bin/sh power/', 'Program="/bin/true power/')
    (conf_dir / "slurm.conf").write_text("NodeFeaturesPlugins=node_features/helpers\n" + text)
    (conf_dir / "helpers.conf").write_text(DEMO_HELPERS)
    config_load(path=conf_dir / "slurm.conf")
    return conf_dir


def node(name: str) -> Node:
    return Node.objects.get(name=name)


def test_powered_down_nodes_have_changeable_features_available_not_active(feature_conf):
    n = node("cloud01")
    assert n.flags & NodeFlag.POWERED_DOWN
    assert (n.features, n.active_features) == ("cloud,img_a,img_b", "")
    assert node("node01").active_features == "rack1,row1,fast"  # not changeable: always active


def test_a_job_constraint_on_an_available_feature_resumes_a_node_with_it_active(feature_conf, users):
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "cloud", "constraint": "img_b"}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    now = timezone.now()
    schedule_pass(now=now)
    job = Job.objects.get(pk=job_id)
    assert job.state == "CONFIGURING" and list(job.alloc) == ["cloud01"]
    n = node("cloud01")
    assert n.flags & NodeFlag.POWER_UP and n.active_features == "img_b"
    # A powered-up node without img_a active cannot run a job asking for it.
    n.flags = 0
    n.save()
    spec2 = {**spec, "constraint": "img_a", "nodelist": "cloud01"}
    other = job_submit(user=users["alice"], spec=spec2).job_ids[0]
    schedule_pass(now=now + timedelta(seconds=1))
    assert Job.objects.get(pk=other).state == "PENDING"


def test_changeable_features_are_reset_at_power_down(feature_conf, users):
    n = node("cloud02")
    n.flags, n.active_features = 0, "img_a"
    n.save()
    services.power_request(actor=users["admin"], nodes="cloud02", op="POWER_DOWN_FORCE")
    for step in range(1, 4):
        services.power_pass(now=timezone.now() + timedelta(seconds=10 * step), force=True)
    n = node("cloud02")
    assert n.flags & NodeFlag.POWERED_DOWN and n.active_features == ""


def test_scontrol_update_available_and_active_features(feature_conf, users, api):
    body = {"nodes": "cloud03", "features": "cloud,img_a,img_b,l9", "active_features": "img_a"}
    assert api("admin").post("/api/nodes/update/", body, format="json").status_code == 200
    n = node("cloud03")
    # l9 is not changeable: always active.
    assert (n.features, n.active_features) == ("cloud,img_a,img_b,l9", "img_a,l9")
    with pytest.raises(ServiceError, match="img_c not in AvailableFeatures"):
        node_update(actor=users["admin"], nodes="cloud03", active_features="img_c")
    show = api("alice").get("/api/nodes/cloud03/")
    if show.status_code == 200:  # what scontrol show node prints
        assert show.json()["active_features"] == "img_a,l9"


def test_without_plugin_active_features_follow_available(conf_dir, settings, users, db):
    settings.CONF_DIR = conf_dir
    config_load(path=conf_dir / "slurm.conf")
    node_update(actor=users["admin"], nodes="node01", features="rack1,gpu")
    assert node("node01").active_features == "rack1,gpu"
    with pytest.raises(ServiceError, match="only with NodeFeaturesPlugins"):
        node_update(actor=users["admin"], nodes="node01", active_features="gpu")


def test_a_bad_helpers_conf_refuses_the_reconfigure(feature_conf):
    version = ClusterConfig.current().version
    (feature_conf / "helpers.conf").write_text(DEMO_HELPERS + "NodeName=ghost1 Feature=x Helper=/bin/true\n")
    with pytest.raises(ServiceError, match=r"helpers\.conf:2: NodeName=ghost1: nodes not in slurm\.conf"):
        config_load(path=feature_conf / "slurm.conf")
    assert ClusterConfig.current().version == version
