"""Who may read the whole accounting: ``sacctmgr dump`` is an administrator's, whatever
PrivateData says, and ``scontrol show assoc_mgr`` follows PrivateData=usage as
slurmctld's assoc_mgr does (a user's own associations and the accounts they coordinate)."""

from __future__ import annotations

import pytest

from limits.coordinators import coordinator_add
from limits.models import LimitsUser

pytestmark = pytest.mark.django_db


@pytest.fixture
def accounting(demo, api, users):
    admin = api("admin")
    for path, body in (
        ("/api/limits/add/account/", {"names": ["science", "chem"]}),
        ("/api/limits/add/user/", {"names": ["alice"], "options": ["Account=science"]}),
        ("/api/limits/add/user/", {"names": ["bob"], "options": ["Account=chem"]}),
    ):
        assert admin.post(path, body, format="json").status_code == 200
    return admin


def _assocs(client) -> set[tuple[str, str]]:
    answer = client.get("/api/limits/assoc_mgr/")
    assert answer.status_code == 200
    return {(a["account"], a["user"]) for a in answer.json()["associations"]}


def test_only_an_administrator_dumps_the_cluster(accounting, api):
    denied = api("alice").get("/api/limits/dump/")
    assert denied.status_code == 403
    assert denied.json()["error"] == "Your user does not have sufficient privileges to dump clusters."
    assert "Account - 'science'" in accounting.get("/api/limits/dump/").json()["text"]
    # AdminLevel=Administrator is sacctmgr's super user, staff or not.
    LimitsUser.objects.filter(name="alice").update(admin_level="Administrator")
    assert "User - 'bob'" in api("alice").get("/api/limits/dump/").json()["text"]


def test_assoc_mgr_keeps_a_user_to_their_own_with_private_usage(accounting, api, users, private_data):
    everyone = _assocs(api("alice"))
    assert ("chem", "bob") in everyone and ("science", "") in everyone  # no PrivateData: all
    private_data("usage")
    assert _assocs(api("alice")) == {("science", "alice")}
    coordinator_add(actor=users["admin"], names=["alice"], options=["account=chem"])
    assert _assocs(api("alice")) == {("science", "alice"), ("chem", ""), ("chem", "bob")}
    assert ("chem", "bob") in _assocs(accounting)  # staff sees past PrivateData
