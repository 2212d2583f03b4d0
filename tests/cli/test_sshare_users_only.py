"""sshare -U/--Users (was an unrecognized option): the users' lines only, as sshare's
PRINT_USERS_ONLY skips every line without a user (src/sshare/process.c)."""

from __future__ import annotations

from cli.main import main


def test_users_only(api, capsys):
    rows = [
        {"Account": "root", "User": "", "RawShares": "", "FairShare": ""},
        {"Account": "physics", "User": "", "RawShares": "1", "FairShare": ""},
        {"Account": "physics", "User": "alice", "RawShares": "1", "FairShare": "0.5"},
    ]
    api.routes[("GET", "/api/limits/sshare/")] = (200, {"rows": rows})
    assert main(["fsched", "sshare", "-a", "-U", "-P", "-o", "Account,User,FairShare"]) == 0
    assert capsys.readouterr().out == "Account|User|FairShare\nphysics|alice|0.5\n"
    assert main(["fsched", "sshare", "-a", "--Users", "-n", "-P", "-o", "User"]) == 0
    assert capsys.readouterr().out == "alice\n"
    assert main(["fsched", "sshare", "-a", "-n", "-P", "-o", "Account"]) == 0
    assert capsys.readouterr().out == "root\nphysics\nphysics\n"
