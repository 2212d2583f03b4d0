"""The dependency core (#16 point 1): Slurm's --dependency grammar, the printed form of
``Dependency=`` / ``squeue %E``, and each type's test against a snapshot of the jobs it
names, with the clock passed in.  No database."""

from __future__ import annotations

import pytest

from cluster.core import scheduler
from cluster.core.dependencies import (
    WHOLE_ARRAY,
    Dependency,
    DependencyError,
    Dependent,
    Facts,
    JobFacts,
    Kind,
    Term,
    TermState,
    Verdict,
    evaluate,
    parse,
    parse_dependency_parameters,
)


def text(spec: str) -> str:
    dep = parse(spec)
    assert dep is not None
    return dep.text()


def test_the_forms_slurm_takes_print_as_slurm_prints_them():
    assert text("afterok:12") == "afterok:12(unfulfilled)"
    assert (
        text("afterok:12:13,afterany:14")
        == "afterok:12(unfulfilled),afterok:13(unfulfilled),afterany:14(unfulfilled)"
    )
    assert text("afternotok:12?after:13+10") == "afternotok:12(unfulfilled)?after:13+10(unfulfilled)"
    assert text("AfterOK:12_4") == "afterok:12_4(unfulfilled)"
    assert text("aftercorr:12_*") == "aftercorr:12_*(unfulfilled)"
    assert text("afterok:12_[1-3,5]") == (
        "afterok:12_1(unfulfilled),afterok:12_2(unfulfilled),afterok:12_3(unfulfilled),afterok:12_5(unfulfilled)"
    )
    assert text("singleton") == "singleton(unfulfilled)"
    assert text("12,13") == "afterany:12(unfulfilled),afterany:13(unfulfilled)"  # the old form
    # A stored form reads back as it was, a failed term stays failed.
    assert text("afterok:12(failed),afterok:13(unfulfilled)") == "afterok:12(failed),afterok:13(unfulfilled)"
    # A duplicate is dropped, as Slurm drops it.
    assert text("afterok:12,afterok:12") == "afterok:12(unfulfilled)"
    assert parse("") is None and parse("0") is None and parse("  ") is None


@pytest.mark.parametrize(
    "bad",
    [
        "afterok",
        "afterok:",
        "afterok:x",
        "afterok:0",
        "afterok:12,",
        "afterok:12,afterok:13?afterok:14",  # "," and "?" mixed
        "afterok:12:",
        "after:12+0",
        "after:12+x",
        "before:12",
        "afterok:12_",
        "afterok:12_[3-1]",
        "afterok:12_[1-3",
        "afterok:12(failed",
        "singletonx",
        "afterok:99999999999999999999",
        "afterok:12 13",
    ],
)
def test_what_slurm_refuses_is_a_dependency_problem(bad):
    with pytest.raises(DependencyError, match=r"^Job dependency problem$"):
        parse(bad)


def job(job_id, state, started=None, **kw) -> JobFacts:
    return JobFacts(job_id=job_id, state=state, started=started, **kw)


def verdict(spec: str, facts: Facts, *, now: float = 1000.0, me: Dependent | None = None):
    dep = parse(spec)
    assert dep is not None
    out = evaluate(dep, me or Dependent(100, "alice", "job"), facts, now)
    return out.verdict, out.text()


def test_afterok_waits_then_is_satisfied_or_never():
    facts = Facts.build([job(1, "RUNNING", 0.0), job(2, "COMPLETED", 0.0), job(3, "FAILED", 0.0)])
    assert verdict("afterok:1", facts) == (Verdict.WAITING, "afterok:1(unfulfilled)")
    assert verdict("afterok:2", facts) == (Verdict.SATISFIED, "")
    assert verdict("afterok:3", facts) == (Verdict.NEVER, "afterok:3(failed)")
    # All of: the fulfilled term is dropped from the text, the waiting one stays.
    assert verdict("afterok:2,afterok:1", facts) == (Verdict.WAITING, "afterok:1(unfulfilled)")
    assert verdict("afterok:1,afterok:3", facts) == (
        Verdict.NEVER,
        "afterok:1(unfulfilled),afterok:3(failed)",
    )


def test_afternotok_afterany_and_after_with_its_time():
    facts = Facts.build(
        [job(1, "COMPLETED", 0.0), job(2, "TIMEOUT", 0.0), job(3, "PENDING"), job(4, "RUNNING", 500.0)]
    )
    assert verdict("afternotok:1", facts)[0] is Verdict.NEVER
    assert verdict("afternotok:2", facts)[0] is Verdict.SATISFIED
    assert verdict("afterany:2", facts)[0] is Verdict.SATISFIED
    assert verdict("afterany:4", facts)[0] is Verdict.WAITING
    assert verdict("after:3", facts)[0] is Verdict.WAITING
    assert verdict("after:4", facts)[0] is Verdict.SATISFIED
    # after:N+10: ten minutes after job 4 started (at 500).
    assert verdict("after:4+10", facts, now=500.0 + 599) == (Verdict.WAITING, "after:4+10(unfulfilled)")
    assert verdict("after:4+10", facts, now=500.0 + 600)[0] is Verdict.SATISFIED


def test_any_of_needs_one_and_fails_only_when_all_have():
    facts = Facts.build([job(1, "FAILED", 0.0), job(2, "RUNNING", 0.0), job(3, "COMPLETED", 0.0)])
    assert verdict("afterok:1?afterok:2", facts) == (
        Verdict.WAITING,
        "afterok:1(failed)?afterok:2(unfulfilled)",
    )
    assert verdict("afterok:1?afterok:3", facts) == (Verdict.SATISFIED, "")
    assert verdict("afterok:1?afternotok:3", facts)[0] is Verdict.NEVER


def test_a_job_that_is_gone_lifts_the_term():
    assert verdict("afterok:77", Facts())[0] is Verdict.SATISFIED


def test_array_tasks_and_whole_arrays():
    tasks = [
        job(10, "COMPLETED", 0.0, array_job_id=10, array_task_id=0),
        job(11, "RUNNING", 0.0, array_job_id=10, array_task_id=1),
        job(12, "FAILED", 0.0, array_job_id=10, array_task_id=2),
    ]
    facts = Facts.build(tasks)
    assert verdict("afterok:10_0", facts)[0] is Verdict.SATISFIED
    assert verdict("afterok:10_1", facts)[0] is Verdict.WAITING
    assert verdict("afterok:10_2", facts)[0] is Verdict.NEVER
    # The whole array: waits while a task runs, then fails because one task failed.
    assert verdict("afterok:10_*", facts) == (Verdict.WAITING, "afterok:10_*(unfulfilled)")
    assert verdict("afterany:10_*", facts)[0] is Verdict.WAITING
    ended = Facts.build([*tasks[:1], job(11, "COMPLETED", 0.0, array_job_id=10, array_task_id=1), tasks[2]])
    assert verdict("afterok:10_*", ended)[0] is Verdict.NEVER
    assert verdict("afterany:10_*", ended)[0] is Verdict.SATISFIED
    assert verdict("afternotok:10_*", ended)[0] is Verdict.SATISFIED


def test_aftercorr_pairs_task_with_task():
    facts = Facts.build(
        [
            job(10, "COMPLETED", 0.0, array_job_id=10, array_task_id=0),
            job(11, "FAILED", 0.0, array_job_id=10, array_task_id=1),
            job(12, "RUNNING", 0.0, array_job_id=10, array_task_id=2),
        ]
    )

    def task(t: int) -> Dependent:
        return Dependent(200 + t, "alice", "b", array_task_id=t)

    assert verdict("aftercorr:10_*", facts, me=task(0))[0] is Verdict.SATISFIED
    assert verdict("aftercorr:10_*", facts, me=task(1))[0] is Verdict.NEVER
    assert verdict("aftercorr:10_*", facts, me=task(2))[0] is Verdict.WAITING


def test_singleton_waits_for_the_same_user_and_name():
    facts = Facts.build(
        [job(5, "RUNNING", 0.0, user="alice", name="sim"), job(6, "PENDING", user="alice", name="other")],
        [("alice", "sim"), ("alice", "other"), ("bob", "sim")],
    )
    assert verdict("singleton", facts, me=Dependent(9, "alice", "sim"))[0] is Verdict.WAITING
    assert verdict("singleton", facts, me=Dependent(9, "bob", "sim"))[0] is Verdict.SATISFIED
    # A pending one of the same name submitted before holds it back, a later one not.
    assert verdict("singleton", facts, me=Dependent(9, "alice", "other"))[0] is Verdict.WAITING
    assert verdict("singleton", facts, me=Dependent(4, "alice", "other"))[0] is Verdict.SATISFIED


def test_the_pass_gives_the_reasons_and_the_new_text():
    """The scheduler core evaluates a dependency after a hold and before BeginTime, and
    reports the stored text that changed."""
    nodes = (scheduler.NodeView(0, "n0", 4, 1000, 1, "IDLE", 0),)
    parts = {"p": scheduler.PartitionView("p", (0,))}
    facts = Facts.build([job(1, "RUNNING", 0.0), job(2, "FAILED", 0.0), job(3, "COMPLETED", 0.0)])

    def view(job_id, spec, **kw):
        return scheduler.JobView(job_id, "p", "alice", 0.0, dependency=parse(spec), **kw)

    snap = scheduler.Snapshot(
        now=100.0,
        nodes=nodes,
        partitions=parts,
        pending=(
            view(10, "afterok:1", begin_time=10_000.0),
            view(11, "afterok:2"),
            view(12, "afterok:3,afterok:1"),
            view(13, "afterok:3"),
        ),
        running=(),
        depend_facts=facts,
    )
    result = scheduler.schedule(snap)
    reasons = {p.job_id: (p.reason, p.detail) for p in result.pending}
    assert reasons[10] == ("Dependency", "afterok:1(unfulfilled)")
    assert reasons[11] == ("DependencyNeverSatisfied", "afterok:2(failed)")
    assert reasons[12] == ("Dependency", "afterok:1(unfulfilled)")
    assert [s.job_id for s in result.starts] == [13]
    assert result.dependencies == {11: "afterok:2(failed)", 12: "afterok:1(unfulfilled)", 13: ""}


def test_a_chain_costs_one_lookup_per_term():
    """A chain of 1,000: each job's dependency names one job, so evaluating the whole
    queue is 1,000 lookups (the pass reads those jobs once, by id)."""
    facts = Facts.build([job(i, "PENDING") for i in range(1, 1001)])
    deps = {i: parse(f"afterok:{i - 1}") for i in range(2, 1001)}
    waiting = [evaluate(d, Dependent(i), facts, 0.0).verdict for i, d in deps.items() if d]
    assert waiting == [Verdict.WAITING] * 999


def test_dependency_parameters():
    assert parse_dependency_parameters("kill_invalid_depend").kill_invalid_depend is True
    policy = parse_dependency_parameters("Kill_Invalid_Depend,max_depend_depth=3,disable_remote_singleton")
    assert (policy.kill_invalid_depend, policy.max_depend_depth) == (True, 3)
    assert parse_dependency_parameters(None).kill_invalid_depend is False
    with pytest.raises(ValueError, match="invalid DependencyParameters word 'kill_invalid'"):
        parse_dependency_parameters("kill_invalid")
    with pytest.raises(ValueError, match="invalid max_depend_depth value"):
        parse_dependency_parameters("max_depend_depth=-1")


def test_terms_print_from_their_fields():
    dep = Dependency(
        (
            Term(Kind.AFTER_OK, 12, WHOLE_ARRAY),
            Term(Kind.AFTER, 13, None, 5, TermState.FULFILLED),
            Term(Kind.SINGLETON, state=TermState.FAILED),
        )
    )
    assert dep.text() == "afterok:12_*(unfulfilled),singleton(failed)"
