"""sprio and sdiag against a real controller and agent (#13 point 10): the priorities
sprio shows are the ones the scheduler gave (squeue's %Q), and sdiag's figures move
with real scheduler passes and real jobs."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.e2e.harness import DEMO_CONF, make_cluster, started

WEIGHTS = "PriorityWeightAge=1000\nPriorityWeightJobSize=100000\nPriorityWeightPartition=10000\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    conf = tmp_path_factory.mktemp("sprio-conf")
    shutil.copytree(DEMO_CONF, conf, dirs_exist_ok=True)
    slurm_conf = conf / "slurm.conf"
    slurm_conf.write_text(slurm_conf.read_text() + WEIGHTS)
    with started(make_cluster(tmp_path_factory, "embedded", conf_dir=conf)) as c:
        yield c


def figure(text: str, label: str, nth: int = 0) -> int:
    """The number after ``label`` (its ``nth`` occurrence: main's, then backfill's)."""
    found = re.findall(rf"^\t?{re.escape(label)}\s*(\d+)", text, re.MULTILINE)
    return int(found[nth])


def test_sprio_shows_the_schedulers_priorities(cluster):
    cli = cluster.cli
    # Waiting on drained nodes, eligible: sprio shows them; a job whose --begin is ahead it
    # leaves out, as Slurm's does.
    cli("scontrol", "update", "NodeName=node[01-32]", "State=DRAIN", "Reason=sprio test")
    waiting = ["--wrap", "true"]
    small = int(cli("sbatch", "--parsable", *waiting).stdout)
    wide = int(cli("sbatch", "--parsable", "-p", "long", "-N", "4", *waiting).stdout)
    later = int(cli("sbatch", "--parsable", "--begin=now+3600", *waiting).stdout)

    def priorities():
        out = cli("squeue", "-h", "-j", f"{small},{wide}", "-o", "%i %Q").stdout.split()
        found = dict(zip(map(int, out[::2]), map(int, out[1::2]), strict=True))
        # Submission stores 1; a pass writes the priority it computed.
        return found if len(found) == 2 and all(p > 1 for p in found.values()) else None

    given = cluster.wait_for("a pass gave the jobs their priorities", priorities)
    shown = cli("sprio", "-h", "-j", f"{small},{wide}", "-o", "%i %Y %r").stdout.split("\n")
    rows = {int(line.split()[0]): line.split()[1:] for line in shown if line}
    assert rows == {small: [str(given[small]), "debug"], wide: [str(given[wide]), "long"]}

    table = cli("sprio").stdout.splitlines()
    assert table[0].split() == ["JOBID", "PARTITION", "PRIORITY", "SITE", "AGE", "JOBSIZE", "PARTITION"]
    assert sorted(int(line.split()[0]) for line in table[1:]) == [small, wide]
    weights = cli("sprio", "-w").stdout.splitlines()
    assert weights[1] == "        Weights                               1       1000     100000      10000"
    long = cli("sprio", "-l", "-j", str(wide)).stdout.splitlines()
    assert long[0].split()[:4] == ["JOBID", "PARTITION", "USER", "PRIORITY"]
    # long's PriorityJobFactor=2 is the highest: its whole weight.
    assert long[1].split()[9] == "10000"
    assert cli("sprio", "-j", "999999").stdout == "Unable to find jobs matching user/id(s) specified\n"
    bad = cli("sprio", "-o", "%i %z", check=False)
    assert (bad.returncode, bad.stderr) == (1, "sprio: error: Invalid job format specification: z\n")
    cli("scancel", str(small), str(wide), str(later))
    cli("scontrol", "update", "NodeName=node[01-32]", "State=RESUME")


def test_sdiag_figures_follow_real_passes_and_jobs(cluster):
    cli = cluster.cli
    before = cli("sdiag").stdout
    assert before.startswith("*******************************************************\nsdiag output at ")
    job = int(cli("sbatch", "--parsable", "--wrap", "true").stdout)
    cluster.wait_for("job completed", lambda: cluster.jobs(job)[job]["state"] == "COMPLETED")
    # FSCHED_SCHED_INTERVAL=1: full main passes keep running, and backfill every 5 s.
    after = cluster.wait_for(
        "more passes counted",
        lambda: (
            (out := cli("sdiag").stdout)
            and figure(out, "Total cycles:") > figure(before, "Total cycles:")
            and out
        ),
    )
    for label in ("Jobs submitted:", "Jobs started:", "Jobs completed:"):
        assert figure(after, label) >= figure(before, label) + 1, label
    bf_after = cluster.wait_for(
        "a backfill pass counted",
        lambda: (out := cli("sdiag").stdout) and figure(out, "Total cycles:", 1) > 0 and out,
        timeout=30,
    )
    assert "\tLast cycle when: N/A" not in bf_after
    assert figure(after, "Last cycle:") > 0
    assert figure(after, "Server thread count:") >= 1

    reset = cli("sdiag", "-r")
    assert reset.stdout == "Reset scheduling statistics\n"
    cleared = cli("sdiag").stdout
    assert figure(cleared, "Jobs submitted:") == 0 and figure(cleared, "Jobs completed:") == 0
