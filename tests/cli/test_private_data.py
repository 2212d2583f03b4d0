"""The CLI against a live controller (#15 point 1): with PrivateData=jobs a user cannot see
another user's job or script (squeue, scontrol show job, scontrol write batch_script); a
user made with ``manage.py fsched_user add`` logs the CLI in with ``fsched login``."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from django.core.management import CommandError, call_command

from cluster.services.jobs import job_submit

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = "#!/bin/sh\n# alice-secret-script-6021\ntrue\n"


@pytest.fixture
def private_jobs(private_data):
    private_data("jobs")


def test_with_private_data_jobs_the_cli_shows_another_users_script_to_nobody(private_jobs, users, live_cli):
    spec = {"script": SCRIPT, "work_dir": "/tmp", "hold": True}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]

    assert live_cli("alice", "scontrol", "write", "batch_script", str(job_id), "-") == (0, SCRIPT, "")

    status, out, err = live_cli("bob", "scontrol", "write", "batch_script", str(job_id), "-")
    assert (status, out) == (1, "")
    assert err == "job script retrieval failed: Invalid job id specified\n"
    status, out, err = live_cli("bob", "scontrol", "show", "job", str(job_id))
    assert (status, out, err) == (1, "", "slurm_load_jobs error: Invalid job id specified\n")
    status, out, _ = live_cli("bob", "squeue", "-h", "-t", "all", "-o", "%i")
    assert status == 0 and str(job_id) not in out.split()
    # The administrator still sees it all.
    assert live_cli("admin", "scontrol", "write", "batch_script", str(job_id), "-")[1] == SCRIPT


def test_a_user_added_with_fsched_user_logs_the_cli_in(
    private_jobs, live_cli, live_server, monkeypatch, tmp_path
):
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO("carol-long-passphrase-77\n"))
    call_command("fsched_user", "add", "carol", "--password-stdin", stdout=out, stderr=err)
    token = out.getvalue().strip()
    assert token and "\n" not in token
    assert "Added user carol (password set)" in err.getvalue()
    with pytest.raises(CommandError, match="user 'carol' already exists"):
        call_command("fsched_user", "add", "carol")
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    with pytest.raises(CommandError, match="empty password on standard input"):
        call_command("fsched_user", "add", "dora", "--password-stdin")

    # fsched login with the password, as the user would, into a credentials file of its own.
    from cli import main as cli_main

    config = tmp_path / "carol.json"
    monkeypatch.setenv("FSCHED_CLI_CONFIG", str(config))
    monkeypatch.delenv("FSCHED_TOKEN", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("carol-long-passphrase-77\n"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = cli_main.main(
            ["fsched", "login", "--url", live_server.url, "-u", "carol", "--password-stdin"]
        )
    assert status == 0, printed.getvalue()
    assert json.loads(config.read_text())["username"] == "carol"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli_main.main(["fsched", "sbatch", "--parsable", "-H", "--wrap", "true"]) == 0
    carol_job = int(printed.getvalue().strip())
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli_main.main(["fsched", "squeue", "-h", "-o", "%i %u"]) == 0
    assert printed.getvalue().split("\n")[0].split() == [str(carol_job), "carol"]
    # The token printed by fsched_user works too, and is carol's.
    monkeypatch.setenv("FSCHED_TOKEN", token)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli_main.main(["fsched", "squeue", "-h", "-o", "%i"]) == 0
    assert printed.getvalue().split() == [str(carol_job)]
