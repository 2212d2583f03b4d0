"""sacctmgr show user|account withassoc (cli.main against a live controller): each user's or
account's row once per association, the association's columns after the entity's, as
sacctmgr's default formats give them; the pre-TRES columns (MaxCPUs, GrpMem ...) read out of
the TRES limits."""

from __future__ import annotations

import pytest

from limits.services import record_add, record_modify

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def accounts(demo, users):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["science"])
    record_add(actor=admin, entity="account", names=["chem"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=science"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=chem"])
    record_modify(actor=admin, entity="user", where=["name=alice", "account=chem"],
                  options=["MaxJobs=3", "MaxTRES=cpu=8,node=2", "MaxWall=1:00:00"])  # fmt: skip
    record_modify(actor=admin, entity="account", where=["name=chem"], options=["GrpTRES=cpu=64,mem=2G"])
    return users


def test_show_user_withassoc(accounts, live_cli):
    status, out, err = live_cli("admin", "sacctmgr", "-P", "show", "user", "alice", "withassoc")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == (
        "User|Def Acct|Admin|Cluster|Account|Partition|Share|Priority|MaxJobs|MaxNodes|MaxCPUs|"
        "MaxSubmit|MaxWall|MaxCPUMins|QOS|Def QOS"
    )
    rows = [dict(zip(lines[0].split("|"), line.split("|"), strict=True)) for line in lines[1:]]
    assert sorted(r["Account"] for r in rows) == ["chem", "science"]
    chem = next(r for r in rows if r["Account"] == "chem")
    assert (chem["User"], chem["Def Acct"], chem["MaxJobs"], chem["MaxNodes"], chem["MaxCPUs"]) == (
        "alice",
        "science",
        "3",
        "2",
        "8",
    )
    assert chem["MaxWall"] == "01:00:00"
    # Without withassoc: sacctmgr's three columns, one row.
    status, out, _ = live_cli("admin", "sacctmgr", "-nP", "show", "user", "alice")
    assert out == "alice|science|None\n"
    # format= picks association columns too.
    status, out, _ = live_cli("admin", "sacctmgr", "-nP", "show", "user", "withassoc", "where", "name=alice",
                              "format=User,Account,MaxCPUs")  # fmt: skip
    assert sorted(out.splitlines()) == ["alice|chem|8", "alice|science|"]


def test_show_account_withassoc(accounts, live_cli):
    status, out, err = live_cli("admin", "sacctmgr", "-nP", "show", "account", "chem", "withassoc",
                                "format=Account,ParentName,User,GrpCPUs,GrpMem")  # fmt: skip
    assert (status, err) == (0, "")
    # The account's own association (under root, its GrpTRES), then its user's.
    assert out.splitlines() == ["chem|root||64|2048", "chem||alice||"]
