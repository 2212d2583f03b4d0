"""The controller's side of job steps (steps/services.py, its API): who may start one,
on which CPUs, what the agents are told, and how a step ends."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db.models import Q
from django.utils import timezone

from cluster import accounting, publish
from cluster.models import Job
from cluster.services import agents
from cluster.services.jobs import job_resume, job_submit, job_suspend
from cluster.services.scheduling import schedule_pass
from slurmwords.step_ids import INTERACTIVE_STEP
from steps import services
from steps.models import Step

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]
KEY = "ab" * 32


class Listener:
    def __init__(self, *nodes: str) -> None:
        self.layer = get_channel_layer()
        self.channel = async_to_sync(self.layer.new_channel)()
        for node in nodes:
            async_to_sync(self.layer.group_add)(publish.node_group(node), self.channel)

    def payloads(self) -> list[dict]:
        async def drain() -> list[dict]:
            out = []
            while True:
                try:
                    out += (await asyncio.wait_for(self.layer.receive(self.channel), 0.05))["payloads"]
                except TimeoutError:
                    return out

        return async_to_sync(drain)()


def running_job(user, *, launched: bool = True, **spec) -> Job:
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[], completions=[], now=timezone.now() - timedelta(minutes=1),
    )  # fmt: skip
    spec = {"wrap": "sleep 100", "work_dir": "/tmp", "partition": "batch", "nodes": 2, "ntasks": 8, **spec}
    job_id = job_submit(user=user, spec=spec).job_ids[0]
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    if launched:
        agents.job_started(job_id=job.id, node=job.batch_host, run=job.restart_count)
    return job


def body(**kw) -> dict:
    return {"ntasks": 4, "argv": ["hostname"], "environment": {"PATH": "/usr/bin"}, "work_dir": "/tmp",
            "io_host": "127.0.0.1", "io_port": 40000, "io_key": KEY, **kw}  # fmt: skip


def test_the_owner_starts_steps_numbered_from_zero_launched_on_each_node(
    demo, users, api, django_capture_on_commit_callbacks
) -> None:
    job = running_job(users["alice"])
    nodes = list(job.alloc)
    listener = Listener(*nodes)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api("alice").post(f"/api/jobs/{job.id}/steps/", body(), format="json")
    assert answer.status_code == 201, answer.json()
    step = answer.json()
    assert (step["id"], step["num_tasks"], step["tasks_per_node"]) == (f"{job.id}.0", 4, "2(x2)")
    launches = [p for p in listener.payloads() if p["type"] == "step_launch"]
    assert sorted((p["node"], p["tasks"], p["node_index"]) for p in launches) == [
        (nodes[0], [0, 1], 0), (nodes[1], [2, 3], 1)
    ]  # fmt: skip
    assert all(
        p["io_key"] == KEY and p["argv"] == ["hostname"] and p["job"]["user"] == "alice" for p in launches
    )
    # Exclusive: the first step holds two CPUs a node; the next gets the other two.
    second = api("alice").post(f"/api/jobs/{job.id}/steps/", body(), format="json").json()
    assert second["step_id"] == 1
    assert Step.objects.get(job=job, step_id=1).layout[0][2] == [2, 3]
    busy = api("alice").post(f"/api/jobs/{job.id}/steps/", body(ntasks=1), format="json")
    assert busy.status_code == 409 and busy.json()["error"] == "Requested nodes are busy"
    shared = api("alice").post(f"/api/jobs/{job.id}/steps/", body(ntasks=1, overlap=True), format="json")
    assert shared.status_code == 201


def test_only_the_job_s_user_or_an_operator_runs_a_step_and_only_in_a_running_job(demo, users, api) -> None:
    job = running_job(users["alice"])
    assert api(None).post(f"/api/jobs/{job.id}/steps/", body(), format="json").status_code in (401, 403)
    refused = api("bob").post(f"/api/jobs/{job.id}/steps/", body(), format="json")
    assert refused.status_code == 403 and refused.json()["error"] == "Access/permission denied"
    assert api("admin").post(f"/api/jobs/{job.id}/steps/", body(), format="json").status_code == 201
    bad = api("alice").post(f"/api/jobs/{job.id}/steps/", body(argv=[]), format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "argv"
    bad = api("alice").post(f"/api/jobs/{job.id}/steps/", body(io_key="nothex"), format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "io_key"
    bad = api("alice").post(f"/api/jobs/{job.id}/steps/", body(io_host="intranet.example"), format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "io_host"
    too_many = api("alice").post(f"/api/jobs/{job.id}/steps/", body(ntasks=9), format="json")
    assert too_many.json()["error"] == "More processors requested than permitted"
    Job.objects.filter(pk=job.id).update(state="COMPLETED")
    done = api("alice").post(f"/api/jobs/{job.id}/steps/", body(), format="json")
    assert done.status_code == 400 and done.json()["error"] == "Job/step already completing or completed"
    assert Step.objects.filter(job=job).count() == 1  # the admin's


def test_a_step_ends_when_all_its_nodes_report_and_only_from_its_own_nodes(demo, users) -> None:
    job = running_job(users["alice"])
    step = services.create_step(actor=users["alice"], job_id=job.id, data=body())
    n1, n2 = (n for n, _t, _c in step.layout)

    def done(node: str, code: int, nodes: list[str]) -> None:
        msg = {"type": "step_done", "job_id": job.id, "step_id": 0, "node": node, "exit_code": code,
               "signal": 0, "time": 1.0}  # fmt: skip
        services.step_done(nodes=nodes, msg=msg)

    done(n1, 0, nodes=["node30"])  # a connection that does not hold n1: not heard
    assert Step.objects.get(pk=step.pk).reports == {}
    done("node30", 0, nodes=["node30"])  # not a node of the step
    assert Step.objects.get(pk=step.pk).reports == {}
    done(n1, 0, nodes=[n1, n2])
    assert Step.objects.get(pk=step.pk).state == "RUNNING"
    done(n2, 5, nodes=[n1, n2])
    step.refresh_from_db()
    assert (step.state, step.exit_code) == ("FAILED", 5) and step.end_time is not None
    rows, _ = accounting.accounting_jobs(
        viewer=users["alice"],
        filters=accounting.Filters(job_ids=Q(pk=job.id)),
        after=0,
        limit=10,
        now=timezone.now(),
    )
    facts = rows[0]["steps"]
    assert [s["step_id"] for s in facts] == ["batch", "0"]
    assert (facts[1]["state"], facts[1]["exit_code"], facts[1]["ntasks"]) == ("FAILED", 5, 4)


def test_scancel_of_a_step_cancels_it_alone_and_the_job_s_end_ends_its_steps(
    demo, users, django_capture_on_commit_callbacks
) -> None:
    job = running_job(users["alice"])
    first = services.create_step(actor=users["alice"], job_id=job.id, data=body(ntasks=2))
    second = services.create_step(actor=users["alice"], job_id=job.id, data=body(ntasks=2))
    listener = Listener(*job.alloc)
    with django_capture_on_commit_callbacks(execute=True):
        services.cancel_step(actor=users["alice"], job_id=job.id, step_id=0, signal="SIGINT")
    sent = listener.payloads()
    assert {p["type"] for p in sent} == {"step_signal"}
    for node, _tasks, _cpus in first.layout:  # srun's Ctrl-C forwarded, then the end forced
        assert [p["signal"] for p in sent if p["node"] == node] == ["INT", "KILL"]
    first.refresh_from_db()
    assert first.state == "CANCELLED" and Job.objects.get(pk=job.id).state == "RUNNING"
    with pytest.raises(services.ServiceError, match="already completing or completed"):
        services.cancel_step(actor=users["alice"], job_id=job.id, step_id=0)
    with pytest.raises(services.PermissionDenied):
        services.cancel_step(actor=users["bob"], job_id=job.id, step_id=1)
    with django_capture_on_commit_callbacks(execute=True):
        end = {"job_id": job.id, "node": job.batch_host, "exit_code": 0, "signal": 0,
               "end_time": timezone.now().timestamp(), "run": job.restart_count}  # fmt: skip
        agents.jobs_completed(completions=[end])
    second.refresh_from_db()
    assert second.state == "CANCELLED" and second.end_time is not None
    kills = [p for p in listener.payloads() if p["type"] == "step_signal" and p["step_id"] == 1]
    assert {p["signal"] for p in kills} == {"KILL"} and len(kills) == len(second.layout)


def test_a_step_waits_until_the_batch_script_runs(demo, users, api) -> None:
    """Its agent may be reconnecting: a launch sent before would be lost, srun would wait forever."""
    job = running_job(users["alice"], launched=False)
    early = api("alice").post(f"/api/jobs/{job.id}/steps/", body(), format="json")
    assert early.status_code == 409 and early.json()["error"] == "Job is not launched yet"
    agents.job_started(job_id=job.id, node=job.batch_host, run=job.restart_count)
    assert api("alice").post(f"/api/jobs/{job.id}/steps/", body(), format="json").status_code == 201


def test_step_ids_out_of_range_are_not_found(demo, users, api) -> None:
    job = running_job(users["alice"])
    huge = 10**25
    assert api("alice").get(f"/api/jobs/{job.id}/steps/{huge}/").status_code == 404
    assert api("alice").post(f"/api/jobs/{job.id}/steps/{huge}/cancel/", {}, format="json").status_code == 404


def test_a_step_of_a_job_that_failed_with_its_node_is_shown_cancelled(demo, users) -> None:
    job = running_job(users["alice"])
    services.create_step(actor=users["alice"], job_id=job.id, data=body(ntasks=2))
    Job.objects.filter(pk=job.id).update(state="NODE_FAIL", end_time=timezone.now())  # no nodes freed
    rows, _ = accounting.accounting_jobs(
        viewer=users["alice"], filters=accounting.Filters(job_ids=Q(pk=job.id)), after=0, limit=10,
        now=timezone.now(),
    )  # fmt: skip
    step = rows[0]["steps"][1]
    assert (step["state"], step["end_time"] is not None) == ("CANCELLED", True)


def test_suspend_and_resume_stop_and_continue_the_steps_on_every_node(
    demo, users, django_capture_on_commit_callbacks
) -> None:
    job = running_job(users["alice"])
    step = services.create_step(actor=users["alice"], job_id=job.id, data=body(ntasks=4))
    listener = Listener(*job.alloc)
    with django_capture_on_commit_callbacks(execute=True):
        job_suspend(actor=users["admin"], job_id=job.id)
    with django_capture_on_commit_callbacks(execute=True):
        job_resume(actor=users["admin"], job_id=job.id)
    sent = [(p["node"], p["signal"]) for p in listener.payloads() if p["type"] == "step_signal"]
    nodes = [n for n, _t, _c in step.layout]
    assert sorted(sent) == sorted([(n, "STOP") for n in nodes] + [(n, "CONT") for n in nodes])


def test_scancel_signal_reaches_the_steps_by_default_the_batch_shell_with_b_and_both_with_f(
    demo, users, api, django_capture_on_commit_callbacks
) -> None:
    """Slurm's scancel: "signals other than SIGKILL are not sent to the batch step" unless
    -b (the batch step alone) or -f (it too)."""
    job = running_job(users["alice"])
    services.create_step(actor=users["alice"], job_id=job.id, data=body(ntasks=2))
    listener = Listener(*job.alloc)
    listener.payloads()  # the step's launch
    seen = {}
    for scope in (None, "batch", "full"):
        data = {"signal": "USR1", **({"scope": scope} if scope else {})}
        with django_capture_on_commit_callbacks(execute=True):
            assert api("alice").post(f"/api/jobs/{job.id}/cancel/", data, format="json").status_code == 200
        seen[scope] = sorted({p["type"] for p in listener.payloads()})
    assert seen == {None: ["step_signal"], "batch": ["signal"], "full": ["signal", "step_signal"]}
    bad = api("alice").post(f"/api/jobs/{job.id}/cancel/", {"signal": "USR1", "scope": "all"}, format="json")
    assert bad.status_code == 400 and "Invalid signal scope" in bad.json()["error"]


def test_a_step_launch_carries_sbatch_signal_unless_it_is_the_batch_shell_s(
    demo, users, django_capture_on_commit_callbacks
) -> None:
    for text, expected in (("USR2@90", True), ("B:USR2@90", False)):
        job = running_job(users["alice"], signal=text, time="10")
        listener = Listener(*job.alloc)
        with django_capture_on_commit_callbacks(execute=True):
            services.create_step(actor=users["alice"], job_id=job.id, data=body(ntasks=2))
        launches = [p for p in listener.payloads() if p["type"] == "step_launch"]
        assert launches
        job.refresh_from_db()
        for p in launches:
            if expected:
                assert p["warn_signal"] == 12  # SIGUSR2
                assert p["warn_at"] == pytest.approx(job.start_time.timestamp() + 600 - 90)
            else:
                assert p.get("warn_signal") is None and p.get("warn_at") is None


def test_a_step_launch_carries_the_job_s_start_moved_by_its_suspensions_and_its_time_limit(
    demo, users, django_capture_on_commit_callbacks
) -> None:
    """For hres/lua's task functions, whose job.end_time is the job's expected end as of
    the step's start: the limit counts run time, so 90 s suspended move the start by 90 s."""
    job = running_job(users["alice"], time="30")
    Job.objects.filter(pk=job.id).update(paused_seconds=90)
    job.refresh_from_db()
    listener = Listener(*job.alloc)
    with django_capture_on_commit_callbacks(execute=True):
        services.create_step(actor=users["alice"], job_id=job.id, data=body(ntasks=2))
    launches = [p for p in listener.payloads() if p["type"] == "step_launch"]
    assert launches and all(p["job"]["time_limit"] == 30 for p in launches)
    assert {p["job"]["start_time"] for p in launches} == {job.start_time.timestamp() + 90}


def test_srun_pty_reaches_every_node_with_srun_s_terminal_size(
    demo, users, api, django_capture_on_commit_callbacks
) -> None:
    job = running_job(users["alice"])
    listener = Listener(*job.alloc)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api("alice").post(
            f"/api/jobs/{job.id}/steps/", body(pty=True, pty_rows=30, pty_cols=100), format="json"
        )
    assert answer.status_code == 201, answer.json()
    launches = [p for p in listener.payloads() if p["type"] == "step_launch"]
    assert len(launches) == 2
    assert all((p["pty"], p["pty_rows"], p["pty_cols"]) == (True, 30, 100) for p in launches)
    # srun's own refusal; a value that is not a flag or a size, a 400 naming it.
    for bad, field in ((body(pty=True, std_out="x"), "pty"), (body(pty="yes"), "pty"),
                       (body(pty=True, pty_rows=0), "pty_rows")):  # fmt: skip
        answer = api("alice").post(f"/api/jobs/{job.id}/steps/", bad, format="json")
        assert answer.status_code == 400, answer.json()
        assert field in str(answer.json())
    assert Step.objects.filter(job=job).count() == 1
    refused = api("alice").post(f"/api/jobs/{job.id}/steps/", body(pty=True, std_in="f"), format="json")
    assert refused.json()["error"] == "--error/--input/--output are incompatible with --pty"


def test_srun_interactive_is_slurmctld_s_interactive_step_and_holds_no_cpus(
    demo, users, api, django_capture_on_commit_callbacks
) -> None:
    job = running_job(users["alice"])
    first = next(iter(job.alloc))
    listener = Listener(*job.alloc)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api("alice").post(
            f"/api/jobs/{job.id}/steps/", body(ntasks=None, interactive=True, name="x"), format="json"
        )
    assert answer.status_code == 201, answer.json()
    step = answer.json()
    assert (step["name"], step["num_tasks"], step["node_list"], step["overlap"]) == (
        "interactive",
        1,
        first,
        True,
    )
    (launch,) = [p for p in listener.payloads() if p["type"] == "step_launch"]
    # The shell has the job's CPUs on its node (a task's share would pin it to one).
    assert (launch["node"], launch["tasks"], launch["cpu_ids"], launch["cpus_per_task"]) == (
        first, [0], [0, 1, 2, 3], 4
    )  # fmt: skip
    # Every CPU of the job is still free for the steps run from that shell.
    full = api("alice").post(f"/api/jobs/{job.id}/steps/", body(ntasks=8), format="json")
    assert full.status_code == 201, full.json()
    assert "preserve_env" not in launch  # not asked for: not sent
    with django_capture_on_commit_callbacks(execute=True):
        kept = api("alice").post(
            f"/api/jobs/{job.id}/steps/", body(ntasks=1, overlap=True, preserve_env=True), format="json"
        )
    assert kept.status_code == 201, kept.json()
    assert [p["preserve_env"] for p in listener.payloads() if p["type"] == "step_launch"] == [True]
    # One interactive step at a time, as slurmctld's (ESLURM_DUPLICATE_STEP_ID).
    again = api("alice").post(f"/api/jobs/{job.id}/steps/", body(interactive=True), format="json")
    assert again.status_code == 400 and again.json()["error"] == "Duplicate job step id"
    bad = api("alice").post(f"/api/jobs/{job.id}/steps/", body(interactive="yes"), format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "interactive"
    assert Step.objects.filter(job=job).count() == 3


def test_the_interactive_step_takes_no_step_number_and_is_n_interactive(demo, users, api) -> None:
    """slurmctld's SLURM_INTERACTIVE_STEP: ``N.interactive``; the job's srun steps are still
    numbered from 0, and a new interactive step replaces an ended one (slurmdbd keeps a
    step id's last record)."""
    job = running_job(users["alice"])
    shell = api("alice").post(f"/api/jobs/{job.id}/steps/", body(interactive=True), format="json").json()
    assert (shell["id"], shell["step_id"]) == (f"{job.id}.interactive", INTERACTIVE_STEP)
    first = api("alice").post(f"/api/jobs/{job.id}/steps/", body(ntasks=1), format="json").json()
    assert first["id"] == f"{job.id}.0"
    shown = api("alice").get(f"/api/jobs/{job.id}/steps/{INTERACTIVE_STEP}/").json()
    assert shown["id"] == f"{job.id}.interactive"
    services.cancel_step(actor=users["alice"], job_id=job.id, step_id=INTERACTIVE_STEP)
    again = api("alice").post(f"/api/jobs/{job.id}/steps/", body(interactive=True), format="json")
    assert again.status_code == 201, again.json()
    assert sorted(Step.objects.filter(job=job).values_list("step_id", "state")) == [
        (0, "RUNNING"), (INTERACTIVE_STEP, "RUNNING")
    ]  # fmt: skip
    second = api("alice").post(f"/api/jobs/{job.id}/steps/", body(ntasks=1), format="json").json()
    assert second["id"] == f"{job.id}.1"
    only = accounting.Filters(job_ids=Q(pk=job.id))
    now = timezone.now()
    rows, _ = accounting.accounting_jobs(viewer=users["alice"], filters=only, after=0, limit=10, now=now)
    assert [s["step_id"] for s in rows[0]["steps"]] == ["batch", "interactive", "0", "1"]


def test_srun_multi_prog_sends_each_node_its_tasks_own_argv(
    demo, users, api, django_capture_on_commit_callbacks
) -> None:
    job = running_job(users["alice"])
    listener = Listener(*job.alloc)
    per_task = [["echo", f"task{t}"] for t in range(4)]
    with django_capture_on_commit_callbacks(execute=True):
        answer = api("alice").post(
            f"/api/jobs/{job.id}/steps/", body(argv=["mp.conf"], task_argv=per_task), format="json"
        )
    assert answer.status_code == 201, answer.json()
    launches = [p for p in listener.payloads() if p["type"] == "step_launch"]
    assert sorted(t for p in launches for t in p["task_argv"]) == ["0", "1", "2", "3"]
    for p in launches:
        assert set(p["task_argv"]) == {str(t) for t in p["tasks"]}
        assert all(p["task_argv"][str(t)] == ["echo", f"task{t}"] for t in p["tasks"])
    for bad in (per_task[:3], [["echo"], [], ["x"], ["y"]], "echo"):
        answer = api("alice").post(f"/api/jobs/{job.id}/steps/", body(task_argv=bad), format="json")
        assert answer.status_code == 400 and "argv" in str(answer.json()), answer.json()
    assert Step.objects.filter(job=job).count() == 1


def test_srun_cpu_bind_reaches_every_node(demo, users, api, django_capture_on_commit_callbacks) -> None:
    job = running_job(users["alice"])
    listener = Listener(*job.alloc)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api("alice").post(
            f"/api/jobs/{job.id}/steps/", body(cpu_bind="none", cpu_bind_verbose=True), format="json"
        )
    assert answer.status_code == 201, answer.json()
    launches = [p for p in listener.payloads() if p["type"] == "step_launch"]
    assert len(launches) == 2
    assert all((p["cpu_bind"], p["cpu_bind_verbose"]) == ("none", True) for p in launches)
    for bad in (body(cpu_bind="map_cpu"), body(cpu_bind=3), body(cpu_bind_verbose="yes")):
        answer = api("alice").post(f"/api/jobs/{job.id}/steps/", bad, format="json")
        assert answer.status_code == 400 and "cpu_bind" in str(answer.json()), answer.json()
