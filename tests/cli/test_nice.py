"""``sbatch --nice[=adjustment]`` (#14 point 6) through the real commands against a live
controller: stored, shown by ``squeue -o %y``, ``squeue --json``, ``scontrol show job`` and
``sprio -l``; changed by ``scontrol update Nice=``; a negative one only for operators, and
the range sbatch and scontrol check, with Slurm's words."""

from __future__ import annotations

import json

import pytest

from cli import sbatch
from cli.squeue_long_format import to_format
from cluster.models import Job
from cluster.services.nodes import node_update
from cluster.services.scheduling import schedule_pass
from tests.limits.test_nice_priority import WEIGHTS

pytestmark = pytest.mark.django_db(transaction=True)


def submitted(result: tuple[int, str, str]) -> int:
    status, out, err = result
    assert (status, err) == (0, ""), err
    assert out.startswith("Submitted batch job ")
    return int(out.split()[-1])


def nice_of(live_cli, job_id: int) -> str:
    status, out, err = live_cli("alice", "squeue", "-h", "-r", "-j", str(job_id), "-o", "%i %y")
    assert (status, err) == (0, ""), err
    return out


def test_nice_alone_is_100_and_a_value_is_taken_only_after_the_equals_sign():
    # getopt_long's optional argument: "--nice 5" is --nice (100), then the script "5".
    assert (sbatch.parse_args(["--nice", "job.sh"]).nice, sbatch.parse_args(["--nice", "job.sh"]).script) == (
        "100",
        "job.sh",
    )
    assert sbatch.parse_args(["--nice=-7", "job.sh"]).nice == "-7"
    assert sbatch.parse_args(["--ni=3", "job.sh", "--nice=9"]).script_args == ["--nice=9"]


def test_sbatch_nice_is_stored_and_shown(users, demo, live_cli):
    alone = submitted(live_cli("alice", "sbatch", "--nice", "--begin=now+3600", "--wrap", "true"))
    given = submitted(live_cli("alice", "sbatch", "--nice=25", "--begin=now+3600", "--wrap", "true"))
    plain = submitted(live_cli("alice", "sbatch", "--begin=now+3600", "--wrap", "true"))
    assert [nice_of(live_cli, j) for j in (alone, given, plain)] == [
        f"{alone} 100\n",
        f"{given} 25\n",
        f"{plain} 0\n",
    ]
    status, out, _ = live_cli("alice", "scontrol", "show", "job", str(given))
    assert status == 0 and " Nice=25 " in out
    status, out, _ = live_cli("alice", "squeue", "--json", "-j", str(alone))
    assert status == 0 and json.loads(out)["jobs"][0]["nice"] == 100  # Slurm's NICE: a plain number
    # An #SBATCH line gives it too, and every task of an array has it.
    status, out, err = live_cli(
        "alice", "sbatch", "--array=1-3", "--nice=7", "--begin=now+3600", "--wrap", "true"
    )
    array = submitted((status, out, err))
    assert Job.objects.filter(array_job_id=array).count() == 3
    assert set(Job.objects.filter(array_job_id=array).values_list("nice", flat=True)) == {7}


def test_squeue_format_by_names():
    # squeue(1)'s -O: 20 wide unless sized, "." right-justifies, a suffix follows the field.
    assert to_format("JobId,nice") == "%20A%20y"
    assert to_format("jobid:.6,Nice:5|,state:") == "%.6A%5y|%T"
    with pytest.raises(ValueError, match=r"^Invalid job format specification: nicety$"):
        to_format("nicety")


def test_squeue_shows_the_nice_by_field_name(users, demo, live_cli):
    job_id = submitted(live_cli("alice", "sbatch", "--nice=9", "--begin=now+3600", "--wrap", "true"))
    status, out, err = live_cli("alice", "squeue", "-j", str(job_id), "--Format=jobid:.8,nice:.5")
    assert (status, err) == (0, ""), err
    assert out == f"   JOBID NICE\n{job_id:>8}    9\n"
    status, out, err = live_cli("alice", "squeue", "-o", "%i", "-O", "nice")
    assert (status, out, err) == (1, "", "squeue: error: -O (--Format) is incompatible with -o (--format)\n")


def test_a_directive_gives_the_nice(users, demo, live_cli, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --nice=42\n#SBATCH --begin=now+3600\ntrue\n")
    job_id = submitted(live_cli("alice", "sbatch", str(script)))
    assert Job.objects.get(pk=job_id).nice == 42


def test_the_range_and_a_negative_nice_are_refused_as_slurm_refuses_them(users, demo, live_cli):
    status, out, err = live_cli("alice", "sbatch", "--nice=2147483646", "--wrap", "true")
    assert (status, out, err) == (
        1,
        "",
        "sbatch: error: Invalid --nice value, out of range (+/- 2147483645)\n",
    )
    status, out, err = live_cli("alice", "sbatch", "--nice=-2147483646", "--wrap", "true")
    assert (status, err) == (1, "sbatch: error: Invalid --nice value, out of range (+/- 2147483645)\n")
    status, out, err = live_cli("alice", "sbatch", "--nice=ten", "--wrap", "true")
    assert (status, err) == (1, "sbatch: error: Invalid --nice value: ten\n")
    # slurmctld's ESLURM_INVALID_NICE for a user who is not an operator.
    status, out, err = live_cli("alice", "sbatch", "--nice=-5", "--wrap", "true")
    assert (status, out, err) == (1, "", "sbatch: error: Batch job submission failed: Invalid --nice value\n")
    assert not Job.objects.exists()
    operator = submitted(
        live_cli("admin", "sbatch", "--nice=-2147483645", "--begin=now+3600", "--wrap", "true")
    )
    assert Job.objects.get(pk=operator).nice == -2147483645


def test_scontrol_update_nice(users, demo, live_cli):
    job_id = submitted(live_cli("alice", "sbatch", "--nice=50", "--begin=now+3600", "--wrap", "true"))
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "Nice=80") == (0, "", "")
    assert nice_of(live_cli, job_id) == f"{job_id} 80\n"
    # Down to 0 is anyone's (slurmctld checks only the sign), below it an operator's.
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "Nice=0") == (0, "", "")
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "Nice=-1") == (
        1,
        "",
        f"Access/permission denied for job {job_id}\n",
    )
    assert live_cli("bob", "scontrol", "update", f"JobId={job_id}", "Nice=5")[0] == 1
    assert nice_of(live_cli, job_id) == f"{job_id} 0\n"
    assert live_cli("admin", "scontrol", "update", f"JobId={job_id}", "Nice=-10") == (0, "", "")
    assert nice_of(live_cli, job_id) == f"{job_id} -10\n"
    # A bare Nice is 100, as scontrol reads it.
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "Nice") == (0, "", "")
    assert nice_of(live_cli, job_id) == f"{job_id} 100\n"
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "Nice=2147483646") == (
        1,
        "",
        "scontrol: error: Nice value out of range (+/- 2147483645). Value ignored\n",
    )
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "Nice=x")[0] == 1
    assert Job.objects.get(pk=job_id).nice == 100


def test_sprio_shows_the_job_s_nice(users, conf_dir, settings, live_cli):
    from cluster.services.configuration import config_load

    conf = conf_dir / "slurm.conf"
    conf.write_text(conf.read_text() + WEIGHTS)
    settings.CONF_DIR = conf_dir
    config_load(path=conf)
    # Waiting on drained nodes, eligible: sprio shows it (not a job whose --begin is ahead).
    node_update(actor=users["admin"], nodes="node[01-32]", state="DRAIN", reason="test")
    job_id = submitted(live_cli("alice", "sbatch", "--nice=300", "--wrap", "true"))
    later = submitted(live_cli("alice", "sbatch", "--begin=now+3600", "--wrap", "true"))
    schedule_pass()
    status, out, err = live_cli("alice", "sprio", "-h", "-o", "%i %Y %N")
    assert (status, err) == (0, ""), err
    shown_id, priority, nice = out.split()  # one job: not the later one
    assert (int(shown_id), nice) == (job_id, "300") and later != job_id
    assert int(priority) == Job.objects.get(pk=job_id).priority == 5000 - 300
