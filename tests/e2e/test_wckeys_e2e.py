"""WCKeys end to end (issue #13 point 6): a real controller, the real ``fsched`` CLI, and
the demo configuration with ``AccountingStorageEnforce=wckeys`` (which sets TrackWCKey)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.harness import DEMO_CONF, make_cluster, started


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    conf = tmp_path_factory.mktemp("wckeys-conf")
    shutil.copytree(DEMO_CONF, conf, dirs_exist_ok=True)
    slurm_conf = conf / "slurm.conf"
    slurm_conf.write_text(slurm_conf.read_text() + "\nAccountingStorageEnforce=wckeys\n")
    with started(make_cluster(tmp_path_factory, "embedded", conf_dir=conf)) as c:
        yield c


def test_wckeys_from_sacctmgr_to_sbatch_scontrol_and_squeue(cluster):
    me = json.loads((cluster.state_dir / "cli.json").read_text())["username"]
    cli = cluster.cli
    cli("sacctmgr", "-i", "add", "account", "science", "Description=Science")
    cli("sacctmgr", "-i", "add", "user", me, "Account=science", "WCKeys=w1,w2")
    assert f"w1|demo|{me}" in cli("sacctmgr", "show", "wckey", "-P", "-n").stdout.splitlines()

    default = int(cli("sbatch", "--parsable", "--wrap", "true").stdout)
    shown = cli("scontrol", "show", "job", str(default)).stdout
    assert "Account=science QOS=normal WCKey=*w1" in shown
    named = int(cli("sbatch", "--parsable", "--wckey=w2", "--wrap", "sleep 60").stdout)
    assert cli("squeue", "-h", "-j", str(named), "-o", "%w").stdout.strip() == "w2"

    refused = cli("sbatch", "--wckey=w9", "--wrap", "true", check=False)
    assert refused.returncode != 0
    assert refused.stderr.splitlines()[0] == (
        "sbatch: error: Batch job submission failed: Invalid wckey specification"
    )
