"""Reason codes exactly as Slurm prints them (#13 point 1), through the real ``fsched``
command against the real controller: ``squeue -h -j N -o %r`` is the bare code
(``QOSGrpJobsLimit``, ``Licenses``), ``%R`` is ``(QOSGrpJobsLimit)``, ``scontrol show job``
says ``Reason=QOSGrpJobsLimit`` and ``squeue --json`` carries the code alone in
``state_reason``, with fsched's detail apart in ``state_description``.  Slurm's long form
stays where Slurm prints one: ``ReqNodeNotAvail, UnavailableNodes:node[03-04]``."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from django.utils import timezone

from cluster.core.states import Reason
from cluster.models import Job, Node
from cluster.services.jobs import job_submit
from cluster.services.reservations import reservation_create
from cluster.services.scheduling import schedule_pass
from hres import services as hres_services
from limits.core.reasons import ALL_REASONS
from limits.services import record_add, record_modify
from tests.hres.test_services import hres_conf  # noqa: F401 - a fixture
from tests.limits.test_services import enforce, register

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def hres_reasons() -> frozenset[str]:
    """Every code the HRES plugin can give a job: the ``Reason.X`` its core's refusals and
    blocks name (read from hres/core, so a code added there is tested here too)."""
    names = set()
    for path in (ROOT / "hres" / "core").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("Refusal", "Blocked"):
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Attribute) and getattr(first.value, "id", "") == "Reason":
                    names.add(Reason[first.attr].value)
    return frozenset(names)


def submit(user, **spec) -> int:
    spec = {"wrap": "sleep 100", "work_dir": "/tmp", **spec}
    return job_submit(user=user, spec=spec).job_ids[0]


def shown(live_cli, job_id: int) -> dict[str, str]:
    """The reason as each command prints it for one job."""
    _, r, _ = live_cli("alice", "squeue", "-h", "-j", str(job_id), "-o", "%r")
    _, big_r, _ = live_cli("alice", "squeue", "-h", "-j", str(job_id), "-o", "%R")
    _, record, _ = live_cli("alice", "scontrol", "show", "job", str(job_id))
    _, text, _ = live_cli("alice", "squeue", "-j", str(job_id), "--json")
    (job,) = json.loads(text)["jobs"]
    return {
        "%r": r.rstrip("\n"),
        "%R": big_r.rstrip("\n"),
        "Reason=": re.search(r"\bReason=(\S+)", record).group(1),
        "json": job["state_reason"],
        "json detail": job["state_description"],
    }


def test_the_code_tables_cover_the_limits_and_hres_plugins():
    assert {"QOSGrpJobsLimit", "AssocGrpCpuLimit", "QOSMaxGRESPerNode"} <= ALL_REASONS
    assert {"Licenses", "HRESDisabled", "Resources"} <= hres_reasons()


def test_every_code_the_limits_and_hres_plugins_produce_is_printed_alone(users, demo, live_cli):
    """Table-driven: each code, with a detail as the pass records it, on a pending job."""
    codes = sorted(ALL_REASONS | hres_reasons())
    ids = {}
    for code in codes:
        job_id = submit(users["alice"])
        detail = f"{code} GrpTRES=cpu=4 (QOS normal): cpu=4 in use, job asks cpu=2 on layer low1"
        Job.objects.filter(pk=job_id).update(reason=code, reason_detail=detail)
        ids[code] = (job_id, detail)
    wrong = []
    for code, (job_id, detail) in ids.items():
        got = shown(live_cli, job_id)
        want = {"%r": code, "%R": f"({code})", "Reason=": code, "json": code, "json detail": detail}
        if got != want:
            wrong.append((code, got))
    assert not wrong, wrong[:5]
    # One listing of them all says the same.
    _, listing, _ = live_cli("alice", "squeue", "-h", "-o", "%i|%r")
    rows = dict(line.split("|", 1) for line in listing.splitlines())
    assert {rows[str(job_id)] for job_id, _ in ids.values()} == set(codes)


def test_a_qos_limit_is_printed_as_its_code(users, demo, live_cli):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science"])
    enforce("limits")
    register(timezone.now())
    record_modify(actor=admin, entity="qos", where=["name=normal"], options=["GrpJobs=1"])
    submit(users["alice"])
    held = submit(users["alice"])
    schedule_pass()
    job = Job.objects.get(pk=held)
    assert (job.state, job.reason) == ("PENDING", "QOSGrpJobsLimit")
    assert "GrpJobs=1" in job.reason_detail  # the detail is kept, apart
    got = shown(live_cli, held)
    assert got["%r"] == "QOSGrpJobsLimit"
    assert got["%R"] == "(QOSGrpJobsLimit)"
    assert got["Reason="] == "QOSGrpJobsLimit"
    assert got["json"] == "QOSGrpJobsLimit" and "GrpJobs=1" in got["json detail"]


def test_hres_reasons_are_printed_as_their_codes(users, hres_conf, live_cli):  # noqa: F811
    first = submit(users["alice"], partition="all", licenses="flat:12", nodelist="node01")
    schedule_pass()
    assert Job.objects.get(pk=first).state == "RUNNING"
    waiting = submit(users["alice"], partition="all", licenses="flat:1", nodelist="node02")
    hres_services.hres_update(actor=users["admin"], hres_name="natural", disable_hres="true")
    disabled = submit(users["alice"], partition="all", licenses="natural:1")
    schedule_pass()
    for job_id, code in ((waiting, "Licenses"), (disabled, "HRESDisabled")):
        job = Job.objects.get(pk=job_id)
        assert (job.state, job.reason) == ("PENDING", code)
        assert job.reason_detail  # which layer blocks, kept apart
        got = shown(live_cli, job_id)
        assert (got["%r"], got["%R"], got["Reason="], got["json"]) == (code, f"({code})", code, code)


def test_req_node_not_avail_keeps_slurms_long_form_with_the_nodes_folded(users, demo, live_cli):
    register(timezone.now())
    Node.objects.filter(name__in=["node03", "node04"]).update(base_state="DOWN", reason="PSU")
    job_id = submit(users["alice"], nodes="2", nodelist="node[03-04]")
    schedule_pass()
    assert Job.objects.get(pk=job_id).reason == "ReqNodeNotAvail"
    got = shown(live_cli, job_id)
    assert got["%r"] == "ReqNodeNotAvail, UnavailableNodes:node[03-04]"
    assert got["%R"] == "(ReqNodeNotAvail, UnavailableNodes:node[03-04])"
    assert got["Reason="] == "ReqNodeNotAvail,_UnavailableNodes:node[03-04]"
    assert got["json"] == "ReqNodeNotAvail"


def test_required_nodes_of_another_reservation_are_slurms_may_be_reserved(users, demo, live_cli):
    register(timezone.now())
    values = {"name": "R", "start_time": "now", "duration": "60", "nodes": "node[05-06]", "users": "bob"}
    reservation_create(actor=users["admin"], values=values)
    job_id = submit(users["alice"], nodelist="node05")
    schedule_pass()
    got = shown(live_cli, job_id)
    assert got["%r"] == "ReqNodeNotAvail, May be reserved for other job"
    assert got["Reason="] == "ReqNodeNotAvail,_May_be_reserved_for_other_job"
    assert got["json"] == "ReqNodeNotAvail"
    status, out, _ = live_cli("alice", "explain", str(job_id))
    assert status == 0
    assert out.splitlines()[1].startswith("ReqNodeNotAvail: node05 in reservation R until ")
