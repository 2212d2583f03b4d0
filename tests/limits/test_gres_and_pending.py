"""GRES in the limits (``sbatch --gres``: checked at submission, stored, counted by the pass
against GrpTRES / MaxTRESPerJob / MaxTRESPerNode with gres/gpu, shown in the job's TRES),
and the console job page's "Why is this job pending?" section."""

from __future__ import annotations

import pytest
from django.utils import timezone

from cli import sbatch
from cli.sshare import _columns, render
from cluster.models import ClusterConfig, Job, Node
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from limits import selectors
from limits.core.shapes import requested_shape
from limits.services import record_add, record_modify
from tests.limits.test_services import enforce, register

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpus(demo, users):
    """science > alice, limits enforced and gres/gpu tracked (AccountingStorageTRES)."""
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science"])
    enforce("limits", AccountingStorageTRES="gres/gpu")
    register(timezone.now())
    return admin


def submit(users, **spec) -> Job:
    return Job.objects.get(pk=job_submit(user=users["alice"], spec={"wrap": "sleep 100", **spec}).job_ids[0])


# --------------------------------------------------------------------------- sbatch


def test_sbatch_sends_gres_instead_of_dropping_it():
    parser = sbatch.build_parser()
    opts = sbatch.merge_options(
        sbatch._namespace_dict(parser.parse_args(["--gres=gpu:2"])), sbatch.env_options({}), {}
    )
    body = sbatch.build_request(
        opts, script="#!/bin/sh\n", script_name="j.sh", script_args=[], environ={}, cwd="/"
    )
    assert body["gres"] == "gpu:2"
    from_env = sbatch.env_options({"SBATCH_GRES": "gpu:tesla:1"})
    assert from_env["gres"] == "gpu:tesla:1"


# --------------------------------------------------------------------------- submission


def test_gres_is_stored_without_enforcement_and_bad_syntax_is_refused(demo, users):
    assert submit(users, gres="gpu:2").gres == "gpu:2"
    with pytest.raises(ServiceError, match=r"^Invalid generic resource \(gres\) specification"):
        submit(users, gres="gpu:a:b:2")


def test_untracked_gres_is_accepted_and_not_accounted(demo, users):
    """Slurm accepts a GRES that AccountingStorageTRES does not name and runs the job;
    the accounting just does not count it (no TRES, so no limit on it)."""
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science"])
    record_modify(actor=admin, entity="account", where=["name=science"], options=["GrpTRES=gres/gpu=1"])
    enforce("limits")
    register(timezone.now())
    untracked = submit(users, gres="gpu:2")
    assert untracked.gres == "gpu:2"
    schedule_pass()
    untracked.refresh_from_db()
    assert untracked.state == "RUNNING"
    policy = selectors.context().policy
    assert "gres/gpu" not in requested_shape(policy, "debug", {"gres": "gpu:2"}).tres
    # Once tracked, the same request is counted, and the limit holds it.
    enforce("limits", AccountingStorageTRES="gres/gpu,license/fluent")
    tracked = submit(users, gres="gpu:tesla:1")
    schedule_pass()
    tracked.refresh_from_db()
    assert (tracked.state, tracked.reason) == ("PENDING", "AssocGrpGRES")
    assert requested_shape(selectors.context().policy, "debug", {"gres": "gpu:tesla:1"}).tres["gres/gpu"] == 1


# --------------------------------------------------------------------------- the pass


def test_grp_tres_gres_holds_the_job_that_would_exceed_it(gpus, users):
    record_modify(actor=gpus, entity="account", where=["name=science"], options=["GrpTRES=gres/gpu=2"])
    first = submit(users, gres="gpu:2")
    second = submit(users, gres="gpu:1")
    plain = submit(users)  # no GPUs: not held by a GPU limit
    schedule_pass()
    states = {j.id: (j.state, j.reason) for j in Job.objects.all()}
    assert states[first.id][0] == "RUNNING"
    assert states[second.id] == ("PENDING", "AssocGrpGRES")
    assert states[plain.id][0] == "RUNNING"


def test_max_tres_per_job_and_per_node_count_gres_on_every_node(gpus, users):
    record_modify(
        actor=gpus,
        entity="qos",
        where=["name=normal"],
        options=["MaxTRESPerJob=gres/gpu=4", "MaxTRESPerNode=gres/gpu=2"],
    )
    per_job = submit(users, gres="gpu:2", nodes="3")  # 6 GPUs in all, 2 a node
    per_node = submit(users, gres="gpu:3")  # 3 in all, on one node
    fits = submit(users, gres="gpu:2", nodes="2")  # 4 in all
    schedule_pass()
    got = {j.id: (j.state, j.reason) for j in Job.objects.all()}
    assert got[per_job.id] == ("PENDING", "QOSMaxGRESPerJob")
    assert got[per_node.id] == ("PENDING", "QOSMaxGRESPerNode")
    assert got[fits.id][0] == "RUNNING"


def test_job_tres_string_shows_gres_for_all_nodes(gpus, users, api):
    job = submit(users, gres="gpu:2", nodes="2", ntasks="2")
    body = api("alice").get(f"/api/jobs/{job.id}/").json()
    assert body["gres"] == "gpu:2"
    assert body["tres"].endswith(",gres/gpu=4")


# --------------------------------------------------------------------------- job page


def test_job_page_names_the_limit_its_level_and_what_releases_it(gpus, users, client):
    record_modify(actor=gpus, entity="account", where=["name=science"], options=["GrpTRES=gres/gpu=2"])
    submit(users, gres="gpu:2")
    held = submit(users, gres="gpu:2")
    schedule_pass()
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{held.id}/").content.decode()
    why = html.split('id="job-why"', 1)[1].split("</section>", 1)[0]
    assert f'href="/limits/jobs/{held.id}/"' in why and "Why is this job pending?" in why
    assert "AssocGrpGRES" in why
    assert "GrpTRES=gres/gpu=2" in why
    assert "Account account association science" in why
    assert "Released when running jobs of the association science end" in why
    # The fragment the page refreshes from says the same.
    assert "AssocGrpGRES" in client.get(f"/jobs/{held.id}/_body").content.decode()


def test_job_page_names_the_nodes_and_their_state(gpus, users, client):
    Node.objects.filter(name="node03").update(base_state="DOWN", reason="PSU replaced")
    job = submit(users, nodelist="node03")
    schedule_pass()
    job.refresh_from_db()
    assert job.reason == "ReqNodeNotAvail"
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{job.id}/").content.decode()
    why = html.split('id="job-why"', 1)[1].split("</section>", 1)[0]
    assert "node03 DOWN (PSU replaced)" in why and "State=RESUME" in why


@pytest.mark.parametrize("enforce", [True, False])
def test_job_page_names_the_partition_limit_with_both_figures(gpus, users, client, enforce):
    # The debug partition has MaxTime=30 and the job asks for two hours: the same words
    # whether the limits' explainer checks partitions (AccountingStorageEnforce) or not.
    if not enforce:
        cfg = ClusterConfig.current()
        cfg.options = {k: v for k, v in cfg.options.items() if k != "AccountingStorageEnforce"}
        cfg.save()
    job = submit(users, time="2:00:00", partition="debug")
    schedule_pass()
    job.refresh_from_db()
    assert job.reason == "PartitionTimeLimit"
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job.id}/").content.decode()
    why = page.split('id="job-why"', 1)[1].split("</section>", 1)[0]
    assert "time limit 120 minutes exceeds MaxTime=30 (partition debug)" in why


def test_running_job_has_no_pending_section(gpus, users, client):
    job = submit(users)
    schedule_pass()
    client.force_login(users["alice"])
    assert 'id="job-why"' not in client.get(f"/jobs/{job.id}/").content.decode()


# --------------------------------------------------------------------------- sshare


def test_sshare_tres_run_mins_counts_the_time_left_of_running_jobs(gpus, users, api):
    now = timezone.now()
    job_submit(user=users["alice"], spec={"wrap": "sleep 100", "ntasks": "4", "time": "10"}, now=now)
    schedule_pass(now=now)
    rows = api("admin").get("/api/limits/sshare/", {"all": "1"}).json()["rows"]
    by = {(r["Account"].strip(), r["User"]): r["TRESRunMins"] for r in rows}
    # 4 CPUs x (at most) 10 minutes left, on the user's association and every ancestor.
    for key in (("science", "alice"), ("science", ""), ("root", "")):
        run = dict(item.split("=") for item in by[key].split(","))
        assert list(run)[:4] == ["cpu", "mem", "energy", "node"]  # every default TRES, in order
        assert 4 * 9 <= int(run["cpu"]) <= 4 * 10 and 9 <= int(run["node"]) <= 10, (key, by[key])


def test_sshare_cli_prints_the_tres_run_mins_column():
    row = {"Account": "science", "User": "alice", "TRESRunMins": "cpu=40,mem=0"}
    out = render([row], _columns("Account,User,TRESRunMins"), header=True, sep="P")
    assert out == "Account|User|TRESRunMins\nscience|alice|cpu=40,mem=0\n"
