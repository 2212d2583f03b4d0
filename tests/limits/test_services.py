"""The limits services on the database: sacctmgr's add/modify/delete with the examples of
Slurm's resource_limits.html, refusals that leave nothing changed, submission under
AccountingStorageEnforce, the usage cycle and the scheduler pass holding and releasing
jobs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.models import ClusterConfig, Job
from cluster.services import agents
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from limits import selectors
from limits.models import QOS, Association, LimitsState, Usage
from limits.services import record_add, record_delete, record_modify, submit_fields, usage_cycle_run

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]


def enforce(text: str = "limits", **extra: str) -> None:
    cfg = ClusterConfig.current()
    cfg.options = {**cfg.options, "AccountingStorageEnforce": text, **extra}
    cfg.version += 1
    cfg.save()


def register(now=None):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
        now=now,
    )


@pytest.fixture
def tree(demo, users):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="account", names=["physics"], options=["Parent=science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=physics"])
    record_add(actor=admin, entity="user", names=["bob"], options=["Account=science"])
    return admin


def assoc(account: str, user: str | None = None) -> Association:
    return Association.objects.get(account__name=account, user__name=user, partition="")


def version() -> int:
    return LimitsState.objects.get(pk=1).version


def test_spec_examples_set_and_unset_tres(tree):
    record_modify(
        actor=tree, entity="user", where=["name=bob"], options=["GrpTRES=cpu=1500,mem=200,gres/gpu=50"]
    )
    assert assoc("science", "bob").grp_tres == "cpu=1500,mem=200M,gres/gpu=50"
    record_modify(
        actor=tree, entity="user", where=["name=bob"], options=["GrpTRES=cpu=-1,mem=-1,gres/gpu=-1"]
    )
    assert assoc("science", "bob").grp_tres == ""
    record_modify(actor=tree, entity="account", where=["name=science"], options=["GrpTRESMins=cpu=100000"])
    record_modify(actor=tree, entity="account", where=["name=science"], options=["TresDecayHalfLife=cpu=0"])
    a = assoc("science")
    assert (a.grp_tres_mins, a.tres_decay_half_life) == ("cpu=100000", "cpu=0")
    eff = selectors.context().policy.resolve("alice", "physics")
    assert [(r.value, r.source.name) for r in eff.get("GrpTRESMins", "cpu")] == [(100000, "science")]


def test_tres_update_merges_and_minus_one_unsets_counts(tree):
    record_modify(actor=tree, entity="user", where=["name=bob"], options=["GrpTRES=cpu=4", "MaxJobs=3"])
    record_modify(actor=tree, entity="user", where=["name=bob"], options=["GrpTRES=mem=2G"])
    a = assoc("science", "bob")
    assert (a.grp_tres, a.max_jobs) == ("cpu=4,mem=2G", 3)
    record_modify(actor=tree, entity="user", where=["name=bob"], options=["MaxJobs=-1"])
    assert assoc("science", "bob").max_jobs is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["GrpTRES=cpux=4"], "Unknown TRES 'cpux'"),
        (["GrpTRES=cpu"], "Invalid TRES specification"),
        (["GrpTRES=cpu=-5"], "negative counts other than -1"),
        (["MaxJobs=-2"], "negative limits other than -1"),
        (["QOS=nosuch"], "QOS 'nosuch' does not exist"),
        (["DefaultQOS=nosuch"], "QOS 'nosuch' does not exist"),
        (["NoSuchLimit=3"], "Unknown option: NoSuchLimit"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(tree, options, message):
    before = (version(), assoc("science", "bob").grp_tres, assoc("science", "bob").max_jobs)
    with pytest.raises(ServiceError, match=message):
        record_modify(actor=tree, entity="user", where=["name=bob"], options=["MaxJobs=9", *options])
    assert (version(), assoc("science", "bob").grp_tres, assoc("science", "bob").max_jobs) == before


def test_a_cycle_in_the_account_tree_is_refused(tree):
    with pytest.raises(ServiceError, match="cycle in the account tree"):
        record_modify(actor=tree, entity="account", where=["name=science"], options=["Parent=physics"])
    assert assoc("science").parent is None


def test_preview_rolls_back_and_users_may_not_change_limits(tree, users):
    change = record_modify(
        actor=tree, entity="account", where=["name=science"], options=["MaxJobs=2"], commit=False
    )
    assert "Modified account associations..." in change.lines[0] and change.count == 1
    assert assoc("science").max_jobs is None
    with pytest.raises(PermissionDenied):
        record_modify(actor=users["bob"], entity="account", where=["name=science"], options=["MaxJobs=2"])


def test_qos_add_modify_flags(tree):
    record_add(actor=tree, entity="qos", names=["high"], options=["Priority=10", "Flags=DenyOnLimit,NoDecay"])
    record_modify(
        actor=tree, entity="qos", where=["name=high"], options=["Flags-=NoDecay", "MaxTRESPerUser=cpu=8"]
    )
    q = QOS.objects.get(name="high")
    assert (q.priority, q.flags, q.max_tres_per_user) == (10, "DenyOnLimit", "cpu=8")
    with pytest.raises(ServiceError, match="unknown flag"):
        record_modify(actor=tree, entity="qos", where=["name=high"], options=["Flags=Bogus"])


def test_submit_takes_the_default_account_and_refuses_unknown_ones(tree, users):
    enforce("associations")
    job = Job.objects.get(pk=job_submit(user=users["alice"], spec={"wrap": "true"}).job_ids[0])
    assert (job.account, job.qos) == ("physics", "normal")
    with pytest.raises(ServiceError, match=r"^Invalid account or account/partition combination specified"):
        job_submit(user=users["alice"], spec={"wrap": "true", "account": "science"})


def test_deny_on_limit_and_submit_limits_refuse_at_submission(tree, users):
    enforce("limits,qos")
    record_add(
        actor=tree, entity="qos", names=["strict"], options=["Flags=DenyOnLimit", "MaxTRESPerJob=cpu=2"]
    )
    common = {
        "user": "alice",
        "partition": "debug",
        "num_tasks": 4,
        "min_nodes": 1,
        "qos": "strict",
        "time_limit": 10,
    }
    with pytest.raises(ServiceError) as err:
        submit_fields(common)
    first, _, detail = str(err.value).partition("\n")
    assert first == "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    assert "MaxTRESPerJob" in detail
    assert submit_fields({**common, "num_tasks": 2})["qos"] == "strict"
    record_modify(actor=tree, entity="user", where=["name=alice"], options=["MaxSubmitJobs=1"])
    job_submit(user=users["alice"], spec={"wrap": "true"})
    with pytest.raises(ServiceError, match=r"^Job violates accounting/QOS policy"):
        job_submit(user=users["alice"], spec={"wrap": "true"})


def test_grp_tres_mins_without_decay_holds_then_raising_it_releases(tree, users):
    """The recipe of Slurm's resource_limits.html: an allocation that does not come back."""
    enforce("limits", PriorityDecayHalfLife="1")
    record_modify(actor=tree, entity="account", where=["name=science"], options=["GrpTRESMins=cpu=10"])
    record_modify(actor=tree, entity="account", where=["name=science"], options=["TresDecayHalfLife=cpu=0"])
    now = timezone.now()
    register(now)
    first = job_submit(user=users["alice"], spec={"wrap": "sleep 100", "ntasks": 4}, now=now).job_ids[0]
    schedule_pass(now=now)
    assert Job.objects.get(pk=first).state == "RUNNING"
    usage_cycle_run(now=now)
    usage_cycle_run(now=now + timedelta(minutes=3))  # 4 CPUs x 3 min = 12 > 10
    rec = Usage.objects.get(key="assoc|science||")
    assert rec.tres_seconds["cpu"] == pytest.approx(12 * 60)
    later = now + timedelta(minutes=3, seconds=1)
    second = job_submit(user=users["alice"], spec={"wrap": "true"}, now=later).job_ids[0]
    schedule_pass(now=later)
    held = Job.objects.get(pk=second)
    assert (held.state, held.reason) == ("PENDING", "AssocGrpCPUMinutesLimit")
    # Without "safe" the running job over the budget is killed.
    assert Job.objects.get(pk=first).final_state == "TIMEOUT"
    # Decay at minute-long PriorityDecayHalfLife does not touch cpu (TresDecayHalfLife=cpu=0).
    usage_cycle_run(now=now + timedelta(hours=1))
    assert Usage.objects.get(key="assoc|science||").tres_seconds["cpu"] >= 12 * 60
    record_modify(actor=tree, entity="account", where=["name=science"], options=["GrpTRESMins=cpu=100000"])
    schedule_pass(now=later + timedelta(seconds=1))
    assert Job.objects.get(pk=second).state == "RUNNING"


def test_raw_usage_zero_clears_the_account_and_everything_beneath(tree):
    Usage.objects.create(key="assoc|science||", tres_seconds={"cpu": 60.0})
    Usage.objects.create(key="assoc|physics|alice|", tres_seconds={"cpu": 60.0})
    record_modify(actor=tree, entity="account", where=["name=science"], options=["RawUsage=0"])
    assert not Usage.objects.exists()
    with pytest.raises(ServiceError, match="RawUsage can only be set to 0"):
        record_modify(actor=tree, entity="account", where=["name=science"], options=["RawUsage=5"])


def test_deleting_an_association_cancels_its_jobs(tree, users):
    enforce("associations")
    job_id = job_submit(user=users["bob"], spec={"wrap": "true"}).job_ids[0]
    other = job_submit(user=users["alice"], spec={"wrap": "true"}).job_ids[0]
    change = record_delete(actor=tree, entity="user", where=["name=bob", "account=science"])
    assert change.cancelled == [job_id]
    assert Job.objects.get(pk=job_id).state == "CANCELLED"
    assert Job.objects.get(pk=other).state == "PENDING"
    assert not Association.objects.filter(user__name="bob").exists()


def test_deleting_an_account_with_children_is_refused(tree):
    with pytest.raises(ServiceError, match="child accounts"):
        record_delete(actor=tree, entity="account", where=["name=science"])


def test_qos_preempt_list_is_set_by_sacctmgr_and_names_must_exist(tree):
    record_add(actor=tree, entity="qos", names=["low", "high"])
    record_modify(actor=tree, entity="qos", where=["name=high"], options=["Preempt=low"])
    assert QOS.objects.get(name="high").preempt == "low"
    with pytest.raises(ServiceError):
        record_modify(actor=tree, entity="qos", where=["name=high"], options=["Preempt=nosuch"])
    assert QOS.objects.get(name="high").preempt == "low"
