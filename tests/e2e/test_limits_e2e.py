"""Resource limits end to end: a real controller and agent, the real ``fsched`` CLI, and the
demo configuration with ``AccountingStorageEnforce=limits`` and priority/multifactor.

The recipe of Slurm's resource_limits.html (GrpTRESMins with TresDecayHalfLife=cpu=0)
exhausts an allocation, the account's pending jobs hold with AssocGrpCPUMinutesLimit and
raising the limit releases them; DenyOnLimit refuses at submission; bad input changes
nothing; deleting an association cancels its jobs."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.harness import DEMO_CONF, make_cluster, started

SUBMIT_REFUSED = (
    "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
    "(job submit limit, user's size and/or time limits)"
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    conf = tmp_path_factory.mktemp("limits-conf")
    shutil.copytree(DEMO_CONF, conf, dirs_exist_ok=True)
    slurm_conf = conf / "slurm.conf"
    text = slurm_conf.read_text().replace(
        "PriorityType=priority/multifactor",
        "PriorityType=priority/multifactor\nAccountingStorageEnforce=limits\nPriorityWeightFairshare=1000",
    )
    slurm_conf.write_text(text)
    env = {"FSCHED_USAGE_INTERVAL": "1"}
    with started(make_cluster(tmp_path_factory, "embedded", conf_dir=conf, env=env)) as c:
        yield c


@pytest.fixture(scope="module")
def me(cluster) -> str:
    return json.loads((cluster.state_dir / "cli.json").read_text())["username"]


def test_grp_tres_mins_allocation_holds_then_raising_it_releases(cluster, me):
    cli = cluster.cli
    cli("sacctmgr", "-i", "add", "account", "science", "Description=Science")
    cli("sacctmgr", "-i", "add", "user", me, "Account=science")
    cli("sacctmgr", "-i", "modify", "account", "name=science", "set", "GrpTRESMins=cpu=1")
    cli("sacctmgr", "-i", "modify", "account", "name=science", "set", "TresDecayHalfLife=cpu=0")
    shown = cli(
        "sacctmgr", "show", "assoc", "where", "account=science", "format=Account,User,GrpTRESMins", "-P"
    )
    assert "science||cpu=1" in shown.stdout

    first = int(
        cli("sbatch", "--parsable", "-A", "science", "-N", "2", "-n", "8", "--wrap", "sleep 120").stdout
    )
    cluster.wait_for("job running", lambda: cluster.jobs(first)[first]["state"] == "RUNNING")
    # 8 CPUs spend the 1 CPU-minute in ~8 s; without "safe" the running job is then killed.
    cluster.wait_for(
        "job killed over GrpTRESMins",
        lambda: cluster.jobs(first)[first]["state"] not in ("RUNNING", "PENDING"),
        timeout=90,
    )
    second = int(cli("sbatch", "--parsable", "--wrap", "sleep 60").stdout)  # default account
    cluster.wait_for(
        "held by the spent allocation",
        lambda: cluster.jobs(second)[second]["reason"] == "AssocGrpCPUMinutesLimit",
    )
    share = cli("sshare", "-A", "science", "-o", "Account,User,GrpTRESMins,GrpTRESRaw%60").stdout
    science = next(line for line in share.splitlines() if line.strip().startswith("science"))
    assert "cpu=1" in science and "cpu=" in science.split("cpu=1", 1)[1]
    mgr = cli("scontrol", "show", "assoc_mgr").stdout
    assert "TresDecayHalfLife=cpu=0" in mgr and "PriorityDecayHalfLife=" in mgr

    # Raising the limit (through the confirm prompt this time) releases the job at once.
    answer = cli(
        "sacctmgr", "modify", "account", "science", "set", "GrpTRESMins=cpu=100000", input="y\n"
    ).stdout
    assert "Would you like to commit changes?" in answer
    cluster.wait_for("released", lambda: cluster.jobs(second)[second]["state"] == "RUNNING")


def test_deny_on_limit_refuses_at_submission(cluster, me):
    cluster.cli("sacctmgr", "-i", "add", "qos", "strict", "Flags=DenyOnLimit", "MaxTRESPerJob=cpu=1")
    refused = cluster.cli("sbatch", "--qos=strict", "-n", "2", "--wrap", "true", check=False)
    assert refused.returncode != 0
    assert refused.stderr.splitlines()[0] == SUBMIT_REFUSED
    assert cluster.cli("sbatch", "--parsable", "--qos=strict", "--wrap", "true").stdout.strip().isdigit()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["modify", "account", "science", "set", "GrpTRES=bogus=1"], "Unknown TRES 'bogus'"),
        (["modify", "account", "science", "set", "GrpTRES=cpu"], "Invalid TRES specification"),
        (["modify", "account", "science", "set", "MaxJobs=-3"], "negative limits other than -1"),
        (["modify", "account", "science", "set", "QOS=nosuch"], "does not exist"),
        (["modify", "account", "science", "set", "Parent=physics"], "cycle in the account tree"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(cluster, me, args, message):
    cluster.cli("sacctmgr", "-i", "add", "account", "physics", "Parent=science", check=False)
    before = cluster.cli("sacctmgr", "show", "assoc", "-P").stdout
    result = cluster.cli("sacctmgr", "-i", *args, check=False)
    assert result.returncode == 1
    assert message in result.stderr
    assert cluster.cli("sacctmgr", "show", "assoc", "-P").stdout == before


def test_deleting_the_association_cancels_its_jobs(cluster, me):
    job = int(cluster.cli("sbatch", "--parsable", "-A", "science", "--hold", "--wrap", "true").stdout)
    running = int(cluster.cli("sbatch", "--parsable", "-A", "science", "--wrap", "sleep 300").stdout)
    cluster.wait_for("running", lambda: cluster.jobs(running)[running]["state"] == "RUNNING")
    cluster.cli("sacctmgr", "-i", "delete", "user", me, "where", "account=science")
    cluster.wait_for(
        "jobs cancelled",
        lambda: {j["state"] for j in cluster.jobs(job, running).values()} == {"CANCELLED"},
    )
    refused = cluster.cli("sbatch", "-A", "science", "--wrap", "true", check=False)
    assert "Invalid account or account/partition combination specified" in refused.stderr
