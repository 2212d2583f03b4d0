"""The three worked examples of Slurm's hres.html ("Planning Modes") on a real controller
and agent, driven through the real CLI, with the page's own resources.yaml.

The cluster is the demo configuration plus that resources.yaml and a partition ``all``
over node[01-32], so a job can be placed on any nodes the examples name.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import DEMO_CONF, E2ECluster, _modes, make_cluster, started

pytestmark = pytest.mark.e2e

SPEC_FILE = Path(__file__).resolve().parents[1] / "hres" / "spec_resources.yaml"


@pytest.fixture(scope="module", params=_modes())
def hres_cluster(request, tmp_path_factory) -> Iterator[E2ECluster]:
    conf = tmp_path_factory.mktemp("hres-conf") / "conf"
    shutil.copytree(DEMO_CONF, conf)
    shutil.copy(SPEC_FILE, conf / "resources.yaml")
    with (conf / "partitions.conf").open("a") as f:
        f.write("PartitionName=all Nodes=node[01-32] MaxTime=60 DefaultTime=10\n")
    with started(make_cluster(tmp_path_factory, request.param, conf_dir=conf), request.param) as c:
        yield c


def sbatch(c: E2ECluster, tmp_path: Path, licenses: str, nodelist: str, nodes: int = 1) -> int:
    out = c.cli(
        "sbatch", "-p", "all", "-N", str(nodes), "-w", nodelist, "-L", licenses, "-t", "5",
        "--wrap", "sleep 120", cwd=tmp_path,
    ).stdout  # fmt: skip
    return int(out.split()[-1])


def show_job(c: E2ECluster, job_id: int) -> dict[str, str]:
    text = c.cli("scontrol", "show", "job", str(job_id)).stdout
    return dict(pair.split("=", 1) for pair in text.split() if "=" in pair)


def running(c: E2ECluster, *ids: int) -> bool:
    return all(j["state"] == "RUNNING" for j in c.jobs(*ids).values())


def layers(c: E2ECluster, name: str) -> dict[str, dict]:
    data = json.loads(c.cli("scontrol", "show", "license", name, "--json").stdout)
    return {e["layer_name"]: e for e in data["licenses"]}


def cancel(c: E2ECluster, *ids: int) -> None:
    c.cli("scancel", *map(str, ids))
    c.wait_for(
        "jobs to end",
        lambda: all(j["state"] == "CANCELLED" for j in c.jobs(*ids).values()),
    )


def test_mode_1_natural_uses_one_layer_and_250_in_all(hres_cluster, tmp_path):
    c = hres_cluster
    a = sbatch(c, tmp_path, "natural:100", "node01")  # low1 (node[01-16]): the most specific
    c.wait_for("job on low1", lambda: running(c, a))
    b = sbatch(c, tmp_path, "natural:50", "node02")  # low1 is full: the 50 of top
    d = sbatch(c, tmp_path, "natural:100", "node17")  # low2
    c.wait_for("jobs running", lambda: running(c, b, d))
    assert show_job(c, a)["LicensesAlloc"] == "natural(low1*100):100"
    assert show_job(c, b)["LicensesAlloc"] == "natural(top*50):50"
    assert show_job(c, d)["LicensesAlloc"] == "natural(low2*100):100"
    late = sbatch(c, tmp_path, "natural:1", "node03")  # 250 taken: nothing left for node03
    c.wait_for("Licenses", lambda: c.jobs(late)[late]["reason"] == "Licenses")
    shown = show_job(c, late)
    assert shown["JobState"] == "PENDING"
    assert shown["Reason"] == "Licenses"  # Slurm's code alone; the figures are the API's detail
    assert c.jobs(late)[late]["reason_detail"].startswith("natural: 1 requested, layer ")
    assert shown["Licenses"] == "natural:1"
    used = {name: e["used"] for name, e in layers(c, "natural").items()}
    assert used == {"top": 50, "low1": 100, "low2": 100}
    cancel(c, a)  # exactly what a took goes back: low1 serves the waiting job
    c.wait_for("the waiting job to start", lambda: running(c, late))
    assert show_job(c, late)["LicensesAlloc"] == "natural(low1*1):1"
    cancel(c, b, d, late)
    assert {e["used"] for e in layers(c, "natural").values()} == {0}


def test_mode_2_flat_needs_every_layer_and_top_caps_at_24(hres_cluster, tmp_path):
    c = hres_cluster
    a = sbatch(c, tmp_path, "flat:2", "node[01-04]", nodes=4)
    c.wait_for("flat job", lambda: running(c, a))
    assert show_job(c, a)["LicensesAlloc"] == "flat(low1*2,mid1*2,top*2):2"
    b = sbatch(c, tmp_path, "flat:10", "node05")  # low1 10 left, mid1 14, top 22
    d = sbatch(c, tmp_path, "flat:12", "node17")  # low3, mid2, top: 24 used at the top
    c.wait_for("both running", lambda: running(c, b, d))
    late = sbatch(c, tmp_path, "flat:1", "node25")  # low4 and mid2 have room, top does not
    c.wait_for("Licenses", lambda: c.jobs(late)[late]["reason"] == "Licenses")
    assert show_job(c, late)["Reason"] == "Licenses"
    assert c.jobs(late)[late]["reason_detail"] == "flat: 1 requested, layer top has 0 free"
    view = layers(c, "flat")
    assert (view["top"]["used"], view["top"]["free"]) == (24, 0)
    assert (view["low4"]["used"], view["low4"]["free"]) == (0, 12)
    text = c.cli("scontrol", "show", "license", "flat").stdout
    assert "LayerName=top Nodes=node[01-32] Mode=2 DisableHRES=false DisableLayer=false" in text
    cancel(c, a, b, d, late)


def test_mode_3_power_sums_up_the_tree_and_updates_apply(hres_cluster, tmp_path):
    c = hres_cluster
    a = sbatch(c, tmp_path, "power:1000", "node[01-16]", nodes=16)
    c.wait_for("power job", lambda: running(c, a))
    assert show_job(c, a)["LicensesAlloc"] == "power(rack1*8000,rack2*8000,row1*16000,datacenter*16000):1000"
    view = layers(c, "power")
    assert {k: v["used"] for k, v in view.items()} == {
        "rack1": 8000, "rack3": 0, "rack2": 8000, "rack4": 0, "row1": 16000, "row2": 0,
        "datacenter": 16000,
    }  # fmt: skip
    text = c.cli("scontrol", "show", "license", "power").stdout
    assert (
        "LicenseName=power\n   Total=35000 Used=8000 Free=27000 Reserved=0 Remote=no\n"
        "   LayerName=rack1 ParentName=row1 Nodes=node[01-08] Mode=3 DisableHRES=false "
        "DisableLayer=false ConfTotal=40000 BaseUsage=5000\n   Base=storage:5000\n"
    ) in text

    # Runtime updates through scontrol; the running job keeps and releases what it took.
    c.cli("scontrol", "update", "HRESName=power", "LayerName=rack1", "Base=")
    c.cli("scontrol", "update", "HRESName=power", "LayerName=rack2", "Nodes=-node[15-16]", "Count=45000")
    view = layers(c, "power")
    assert (view["rack1"]["total"], view["rack1"]["base"]) == (40000, [])
    assert (view["rack2"]["nodes"], view["rack2"]["conf_total"]) == ("node[09-14]", 45000)
    bad = c.cli("scontrol", "update", "HRESName=power", "LayerName=row1", "Nodes=node01", check=False)
    assert bad.returncode != 0 and "leaf layers" in bad.stderr
    bad = c.cli("scontrol", "update", "HRESName=power", "DisableHRES=maybe", check=False)
    assert bad.returncode != 0 and "true or false" in bad.stderr
    assert layers(c, "power") == view

    c.cli("scontrol", "update", "HRESName=power", "DisableHRES=true")
    off = sbatch(c, tmp_path, "power:10", "node20")
    c.wait_for("HRESDisabled", lambda: c.jobs(off)[off]["reason"] == "HRESDisabled")
    c.cli("scontrol", "update", "HRESName=power", "DisableHRES=false")
    c.wait_for("enabled again", lambda: running(c, off))
    cancel(c, a, off)
    assert {e["used"] for e in layers(c, "power").values()} == {0}
