"""WCKeys end to end (issue #13 point 6): ``sbatch --wckey``, TrackWCKey's default,
AccountingStorageEnforce=wckeys refusing a WCKey the user lacks, ``sacctmgr add user
WCKeys=``/``show wckey``, and the job's WCKey in scontrol, squeue and the API."""

from __future__ import annotations

import pytest

from cli import sbatch
from cli.scontrol import job_record, render_record
from cli.squeue import format_jobs
from cluster.models import Job
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from limits import selectors
from limits.core.policy import User
from limits.core.wckeys import WCKeyError, job_wckey
from limits.dump import dump_text, load_text
from limits.models import LimitsUser
from limits.services import record_add, record_delete, record_modify
from tests.limits.test_services import enforce

pytestmark = pytest.mark.django_db


@pytest.fixture
def keyed(demo, users):
    """alice has WCKeys w1 (her default) and w2; bob has none."""
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science", "WCKeys=W1,w2"])
    record_add(actor=admin, entity="user", names=["bob"], options=["Account=science"])
    return admin


def submit(users, who: str = "alice", **spec) -> Job:
    return Job.objects.get(pk=job_submit(user=users[who], spec={"wrap": "true", **spec}).job_ids[0])


def test_sbatch_sends_the_wckey_from_the_option_and_the_environment():
    parser = sbatch.build_parser()
    opts = sbatch.merge_options(
        sbatch._namespace_dict(parser.parse_args(["--wckey=w1"])), sbatch.env_options({}), {}
    )
    body = sbatch.build_request(
        opts, script="#!/bin/sh\n", script_name="j.sh", script_args=[], environ={}, cwd="/"
    )
    assert body["wckey"] == "w1"
    assert sbatch.env_options({"SBATCH_WCKEY": "w2"})["wckey"] == "w2"


def test_sacctmgr_adds_and_shows_wckeys_and_the_default(keyed):
    alice = LimitsUser.objects.get(name="alice")
    assert alice.default_wckey == "w1"  # the first one, lower case
    assert selectors.list_rows("wckey", {}) == [
        {"Name": "w1", "Cluster": "demo", "User": "alice"},
        {"Name": "w2", "Cluster": "demo", "User": "alice"},
    ]
    assert selectors.list_rows("wckey", {"user": ["bob"]}) == []
    record_modify(actor=keyed, entity="user", where=["name=alice"], options=["DefaultWCKey=w2"])
    assert LimitsUser.objects.get(name="alice").default_wckey == "w2"
    with pytest.raises(ServiceError, match="doesn't have wckey w9"):
        record_modify(actor=keyed, entity="user", where=["name=alice"], options=["DefaultWCKey=w9"])
    record_add(actor=keyed, entity="user", names=["bob"], options=["WCKeys=w3"])  # no account needed
    assert [r["Name"] for r in selectors.list_rows("wckey", {"user": ["bob"]})] == ["w3"]


def test_show_user_has_the_default_wckey_column_when_wckeys_are_tracked(keyed, api):
    def columns() -> list[str]:
        return api("admin").get("/api/limits/show/user/").json()["columns"]

    assert "Def WCKey" not in columns()
    enforce("associations", TrackWCKey="yes")
    assert columns() == ["User", "Def Acct", "Def WCKey", "Admin"]
    rows = api("admin").get("/api/limits/show/user/?where=name=alice").json()["rows"]
    assert rows[0]["Def WCKey"] == "w1"


def test_without_track_wckey_the_job_keeps_what_it_asked(keyed, users):
    assert submit(users, wckey="w9").wckey == "w9"
    assert submit(users).wckey == ""


def test_track_wckey_gives_the_users_default_marked_with_a_star(keyed, users):
    enforce("associations", TrackWCKey="yes")
    assert submit(users).wckey == "*w1"
    assert submit(users, wckey="W2").wckey == "w2"
    assert submit(users, wckey="w9").wckey == "w9"  # not enforced: any key
    assert submit(users, "bob").wckey == "*"  # no default, not enforced


def test_enforced_wckeys_refuse_a_key_the_user_lacks(keyed, users):
    enforce("wckeys")
    assert submit(users, wckey="w2").wckey == "w2"
    for who, spec in (("alice", {"wckey": "w9"}), ("bob", {})):
        with pytest.raises(ServiceError) as err:
            submit(users, who, **spec)
        assert str(err.value).split("\n")[0] == "Invalid wckey specification"
    with pytest.raises(ServiceError, match=r"^Invalid wckey specification"):
        submit(users, wckey="*w1")  # the mark of a default is the controller's
    assert Job.objects.count() == 1


def test_the_wckey_is_shown_by_scontrol_squeue_and_the_api(keyed, users, api):
    enforce("associations", TrackWCKey="yes")
    posted = api("alice").post("/api/jobs/", {"wrap": "true", "wckey": "w2"}, format="json")
    assert posted.status_code == 201
    assert Job.objects.get(pk=posted.json()["job_id"]).wckey == "w2"
    job = submit(users)
    body = api("alice").get(f"/api/jobs/{job.id}/").json()
    assert body["wckey"] == "*w1"
    lines = render_record(job_record(body)).split("\n")
    assert "   Priority=1 Nice=0 Account=science QOS=normal WCKey=*w1" in lines
    assert format_jobs([body], "%i %w") == ["JOBID WCKEY", f"{job.id} *w1"]


def test_the_core_rule_for_each_case():
    users = {"a": User("a", wckeys=frozenset({"x"}), default_wckey="x")}
    assert job_wckey(users, "a", "", track=False, enforce=False) == ""
    assert job_wckey(users, "a", "", track=True, enforce=True) == "*x"
    assert job_wckey(users, "nobody", "", track=True, enforce=False) == "*"
    with pytest.raises(WCKeyError):
        job_wckey(users, "nobody", "", track=True, enforce=True)
    with pytest.raises(WCKeyError):
        job_wckey(users, "a", "y", track=True, enforce=True)


def test_dump_keeps_the_wckeys_and_load_restores_them(keyed):
    text = dump_text()
    assert "User - 'alice':DefaultAccount='science':DefaultWCKey='w1':WCKeys='w1,w2'" in text
    record_modify(actor=keyed, entity="user", where=["name=alice"], options=["DefaultWCKey=w2"])
    load_text(actor=keyed, text=text)  # onto the existing user: the default comes back
    assert LimitsUser.objects.get(name="alice").default_wckey == "w1"
    record_delete(actor=keyed, entity="user", where=["name=alice"])
    assert selectors.list_rows("wckey", {"user": ["alice"]}) == []
    load_text(actor=keyed, text=text)
    assert [r["Name"] for r in selectors.list_rows("wckey", {"user": ["alice"]})] == ["w1", "w2"]
    assert LimitsUser.objects.get(name="alice").default_wckey == "w1"
