"""``sacctmgr add|remove coordinator`` through the real CLI against a live controller (#15
point 1), with Slurm's words."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_sacctmgr_add_and_remove_coordinator_through_the_cli(demo, users, live_cli):
    for words in (
        ("add", "account", "science"),
        ("add", "account", "physics", "Parent=science"),
        ("add", "user", "bob", "Account=physics"),
    ):
        assert live_cli("admin", "sacctmgr", "-i", *words)[0] == 0
    status, out, err = live_cli(
        "admin", "sacctmgr", "-i", "add", "coordinator", "account=science", "names=bob"
    )
    assert (status, err) == (0, "")
    assert out == " Adding Coordinator User(s)\n  bob\n To Account(s) and all sub-accounts\n  science\n"
    status, _, err = live_cli(
        "alice", "sacctmgr", "-i", "add", "coordinator", "account=science", "names=alice"
    )
    assert status == 1 and "Access/permission denied" in err
    status, out, err = live_cli(
        "admin", "sacctmgr", "-i", "remove", "coordinator", "account=science", "names=bob"
    )
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == " Removed Coordinators (sub accounts not listed)"
    status, _, err = live_cli("admin", "sacctmgr", "-i", "add", "coordinator", "names=bob")
    assert status == 1 and "You need to specify a user list and account list here." in err
