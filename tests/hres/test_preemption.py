"""Preemption to reclaim a Mode 3 resource (Slurm's hres.html, "Mode 3, Preemption"): through
the scheduler service, with ``PreemptType=preempt/qos`` in slurm.conf and QOS rows of the
limits app.  No real processes: the victims' exits are reported as an agent would."""

from __future__ import annotations

import logging

import pytest
from django.utils import timezone

from cluster.core.scheduler import PassResult, PassStats, Pending
from cluster.core.states import JobState, Reason
from cluster.models import Event, Job
from cluster.services.configuration import config_load
from cluster.services.scheduling import schedule_pass
from hres import preemption
from limits.models import QOS
from tests.hres.test_services import finish, hres_conf, submit  # noqa: F401 - the demo cluster

pytestmark = pytest.mark.django_db


def _conf(conf, mode: str | None) -> None:
    if mode is not None:
        with (conf / "slurm.conf").open("a") as f:
            f.write(f"PreemptType=preempt/qos\nPreemptMode={mode}\n")
    config_load(path=conf / "slurm.conf")


def _job(user, qos: str, **spec) -> int:
    job_id = submit(user, **spec)
    Job.objects.filter(pk=job_id).update(qos=qos)
    return job_id


def _state(job_id: int) -> str:
    return Job.objects.get(pk=job_id).state


@pytest.fixture
def qos(db):
    QOS.objects.create(name="low", priority=10)
    QOS.objects.create(name="mid", priority=50, preempt="low")
    QOS.objects.create(name="high", priority=100, preempt="mid,low")


def _rack2_holder(user, qos_name: str = "low", per_node: int = 5000) -> int:
    """A job filling row1 from rack2 (node[09-16]): 8 * 5000 of row1's 52000."""
    job = _job(user, qos_name, licenses=f"power:{per_node}", nodes="8", nodelist="node[09-16]")
    schedule_pass(backfill=False)
    assert _state(job) == JobState.RUNNING
    return job


def _rack1_waiter(user) -> int:
    """4 * 4000 on rack1: rack1 has room, row1 (shared with rack2) has not."""
    job = _job(user, "high", licenses="power:4000", nodes="4", nodelist="node[01-04]")
    return job


def test_cancel_preempts_a_job_under_a_shared_layer_without_common_nodes(hres_conf, users, qos):  # noqa: F811
    _conf(hres_conf, "CANCEL")
    low = _rack2_holder(users["alice"])
    high = _rack1_waiter(users["bob"])
    schedule_pass(backfill=False)
    assert _state(high) == JobState.PENDING
    victim = Job.objects.get(pk=low)
    assert victim.final_state == JobState.PREEMPTED and victim.kill_requested is not None
    event = Event.objects.get(job_id=low, reason=f"preempted by job {high}")
    assert event.new_state == JobState.PREEMPTED
    # A second pass while the victim is still ending preempts nothing more.
    schedule_pass(backfill=False)
    assert Event.objects.filter(reason__startswith="preempted by").count() == 1
    finish(low)
    assert _state(low) == JobState.PREEMPTED  # squeue PR, sacct PREEMPTED
    schedule_pass(backfill=False)
    assert _state(high) == JobState.RUNNING


def test_requeue_sends_the_victim_back_to_the_queue(hres_conf, users, qos):  # noqa: F811
    _conf(hres_conf, "REQUEUE")
    low = _rack2_holder(users["alice"])
    high = _rack1_waiter(users["bob"])
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=low).final_state == JobState.REQUEUED
    assert Event.objects.filter(job_id=low, new_state=JobState.PREEMPTED).exists()
    finish(low)
    victim = Job.objects.get(pk=low)
    assert (victim.state, victim.restart_count) == (JobState.PENDING, 1)
    # Under priority/basic the older requeued job would be first in line again: held
    # here, so the pass shows what the preemption freed going to the preemptor.
    Job.objects.filter(pk=low).update(hold="user")
    schedule_pass(backfill=False)
    assert _state(high) == JobState.RUNNING
    assert _state(low) == JobState.PENDING


def test_backfill_passes_do_not_preempt(hres_conf, users, qos):  # noqa: F811
    _conf(hres_conf, "CANCEL")
    low = _rack2_holder(users["alice"])
    high = _rack1_waiter(users["bob"])
    schedule_pass(backfill=True)
    assert Job.objects.get(pk=low).final_state == ""
    assert Job.objects.get(pk=high).reason == Reason.LICENSES


@pytest.mark.parametrize("mode", [None, "SUSPEND", "OFF"])
def test_no_preemption_without_qos_preemption_in_cancel_or_requeue_mode(hres_conf, users, qos, mode):  # noqa: F811
    _conf(hres_conf, mode)
    low = _rack2_holder(users["alice"])
    _rack1_waiter(users["bob"])
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=low).final_state == ""


def test_only_qos_the_preemptor_may_preempt_are_victims(hres_conf, users, qos):  # noqa: F811
    _conf(hres_conf, "CANCEL")
    equal = _rack2_holder(users["alice"], "high")
    _rack1_waiter(users["bob"])
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=equal).final_state == ""  # same priority: not preemptable


def test_the_lowest_qos_priority_goes_first_and_only_as_many_as_needed(hres_conf, users, qos):  # noqa: F811
    _conf(hres_conf, "CANCEL")
    # Two rack2 jobs of 4 nodes each: 2 * 4 * 5000 = 40000 of row1; freeing one is enough.
    mid = _job(users["alice"], "mid", licenses="power:5000", nodes="4", nodelist="node[09-12]")
    low = _job(users["alice"], "low", licenses="power:5000", nodes="4", nodelist="node[13-16]")
    schedule_pass(backfill=False)
    assert _state(mid) == _state(low) == JobState.RUNNING
    _rack1_waiter(users["bob"])
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=low).final_state == JobState.PREEMPTED
    assert Job.objects.get(pk=mid).final_state == ""


def test_mode_1_and_2_resources_are_not_reclaimed(hres_conf, users, qos):  # noqa: F811
    _conf(hres_conf, "CANCEL")
    # flat (Mode 2): low1 node[01-08] has 12; the holder takes them all.
    low = _job(users["alice"], "low", licenses="flat:12", nodes="1", nodelist="node01")
    schedule_pass(backfill=False)
    assert _state(low) == JobState.RUNNING
    high = _job(users["bob"], "high", licenses="flat:2", nodes="1", nodelist="node02")
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=high).reason == Reason.LICENSES
    assert Job.objects.get(pk=low).final_state == ""


def test_an_explicit_preempt_list_governs(hres_conf, users, qos):  # noqa: F811
    _conf(hres_conf, "CANCEL")
    low = _rack2_holder(users["alice"])
    high = _rack1_waiter(users["bob"])
    schedule_pass(backfill=True)  # sets the Licenses reason, preempts nothing
    result = PassResult(
        starts=(),
        pending=(Pending(high, Reason.LICENSES),),
        timeouts=(),
        stats=PassStats(),
    )
    now = timezone.now()
    assert preemption.reclaim(result, now=now, preempt={"high": {"mid"}}) == []
    assert preemption.reclaim(result, now=now, preempt={"high": {"low"}}) == [low]


def test_preempt_mode_reads_slurm_conf_options():
    assert preemption.preempt_mode({"PreemptType": "preempt/qos", "PreemptMode": "REQUEUE,GANG"}) == "REQUEUE"
    assert preemption.preempt_mode({"preempttype": "PREEMPT/QOS", "preemptmode": "cancel"}) == "CANCEL"
    assert (
        preemption.preempt_mode({"PreemptType": "preempt/partition_prio", "PreemptMode": "CANCEL"})
        == "CANCEL"
    )
    assert preemption.preempt_mode({"PreemptType": "preempt/qos", "PreemptMode": "SUSPEND,GANG"}) is None
    assert preemption.preempt_mode({"PreemptType": "preempt/none", "PreemptMode": "CANCEL"}) is None
    # Under partition_prio a partition's own PreemptMode governs its jobs.
    prio = {"PreemptType": "preempt/partition_prio", "PreemptMode": "SUSPEND"}
    assert preemption.preempt_mode(prio, "requeue") == "REQUEUE"
    assert preemption.preempt_mode({**prio, "PreemptMode": "CANCEL"}, "OFF") is None


# --------------------------------------------------------------------------- preempt/partition_prio


def _partition_prio(conf, low_mode: str = "", mode: str = "CANCEL") -> None:
    """``lowp`` (PriorityTier=1) and ``urgent`` (PriorityTier=5) over every node."""
    with (conf / "slurm.conf").open("a") as f:
        f.write(f"PreemptType=preempt/partition_prio\nPreemptMode={mode}\n")
    own = f" PreemptMode={low_mode}" if low_mode else ""
    with (conf / "partitions.conf").open("a") as f:
        f.write(f"PartitionName=lowp Nodes=node[01-32] MaxTime=60 PriorityTier=1{own}\n")
        f.write("PartitionName=urgent Nodes=node[01-32] MaxTime=60 PriorityTier=5\n")
    config_load(path=conf / "slurm.conf")


@pytest.mark.parametrize(
    ("low_mode", "ends"), [("", JobState.PREEMPTED), ("REQUEUE", JobState.REQUEUED), ("OFF", "")]
)
def test_partition_prio_preempts_jobs_of_lower_tier_partitions(hres_conf, users, low_mode, ends):  # noqa: F811
    # #13 point 5: no QOS Preempt list at all, the partitions' PriorityTier decides.
    _partition_prio(hres_conf, low_mode)
    low = _rack2_holder_in(users["alice"], "lowp")
    high = submit(users["bob"], licenses="power:4000", nodes="4", nodelist="node[01-04]", partition="urgent")
    schedule_pass(backfill=False)
    assert _state(high) == JobState.PENDING
    assert Job.objects.get(pk=low).final_state == ends
    if ends:
        assert Event.objects.get(job_id=low, reason=f"preempted by job {high}").detail["preempt_mode"] == (
            "REQUEUE" if ends == JobState.REQUEUED else "CANCEL"
        )
        finish(low)
        Job.objects.filter(pk=low).update(hold="user")  # a requeued victim waits aside
        schedule_pass(backfill=False)
        assert _state(high) == JobState.RUNNING


def test_partition_prio_spares_jobs_of_the_same_tier(hres_conf, users):  # noqa: F811
    _partition_prio(hres_conf)
    low = _rack2_holder_in(users["alice"], "lowp")
    same = submit(users["bob"], licenses="power:4000", nodes="4", nodelist="node[01-04]", partition="lowp")
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=same).reason == Reason.LICENSES
    assert Job.objects.get(pk=low).final_state == ""


def _rack2_holder_in(user, partition: str) -> int:
    job = submit(user, licenses="power:5000", nodes="8", nodelist="node[09-16]", partition=partition)
    schedule_pass(backfill=False)
    assert _state(job) == JobState.RUNNING
    return job


# --------------------------------------------------------------------------- configuration warnings


def test_a_preemption_that_can_never_reclaim_is_warned_about():
    warn = preemption.config_warnings
    tiers = [("debug", 2, ""), ("batch", 1, "")]
    power = ["power"]
    assert warn({}, tiers, power) == ()  # no preemption asked for: a choice
    assert warn({"PreemptType": "preempt/none"}, tiers, power) == ()
    assert warn({"PreemptType": "preempt/qos", "PreemptMode": "SUSPEND"}, tiers, []) == ()  # no Mode 3
    assert warn({"PreemptType": "preempt/qos", "PreemptMode": "REQUEUE"}, tiers, power) == ()
    prio = {"PreemptType": "preempt/partition_prio", "PreemptMode": "CANCEL"}
    assert warn(prio, tiers, power) == ()
    assert warn({**prio, "PreemptMode": "SUSPEND"}, [("debug", 2, ""), ("batch", 1, "REQUEUE")], power) == ()
    assert warn({"PreemptMode": "REQUEUE"}, tiers, power) == (
        "PreemptMode=REQUEUE without a PreemptType: no job is ever preempted to reclaim Mode 3 "
        "resource power; set PreemptType=preempt/qos or preempt/partition_prio",
    )
    assert warn({"PreemptType": "preempt/job_prio", "PreemptMode": "CANCEL"}, tiers, ["power", "heat"]) == (
        "PreemptType=preempt/job_prio never preempts a job to reclaim Mode 3 resources power,heat: "
        "only preempt/qos and preempt/partition_prio do",
    )
    assert warn({"PreemptType": "preempt/qos", "PreemptMode": "SUSPEND,GANG"}, tiers, power) == (
        "PreemptMode=SUSPEND,GANG: no job is ever preempted to reclaim Mode 3 resource power, "
        "only PreemptMode CANCEL or REQUEUE reclaims them",
    )
    assert warn(prio, [("a", 1, ""), ("b", 1, "")], power) == (
        "PreemptType=preempt/partition_prio: every partition has PriorityTier=1, so no job is ever "
        "preempted to reclaim Mode 3 resource power",
    )
    assert warn(prio, [("debug", 2, ""), ("batch", 1, "OFF")], power) == (
        "PreemptType=preempt/partition_prio: no partition below PriorityTier=2 has PreemptMode "
        "CANCEL or REQUEUE (PreemptMode=CANCEL), so no job is ever preempted to reclaim Mode 3 "
        "resource power",
    )


def test_the_warning_is_logged_when_the_configuration_is_loaded(hres_conf, caplog):  # noqa: F811
    with (hres_conf / "slurm.conf").open("a") as f:
        f.write("PreemptType=preempt/partition_prio\nPreemptMode=SUSPEND\n")
    with caplog.at_level(logging.WARNING, logger="cluster.services.configuration"):
        config_load(path=hres_conf / "slurm.conf")
    assert "no partition below PriorityTier=2 has PreemptMode CANCEL or REQUEUE" in caplog.text
