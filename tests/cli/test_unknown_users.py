"""``-u`` of a name that is no user: squeue, scancel and sacct say so in Slurm's words and
exit codes rather than listing (or cancelling) nothing in silence.

Words and codes from Slurm 23.11: squeue's ``_build_user_list`` (src/squeue/opts.c:
``error("Invalid user: %s\\n")`` and it goes on, exit 0), scancel's ``_opt_verify``
(src/scancel/opt.c: ``Invalid user name``, exit 1), sacct's ``-u`` through
``slurm_addto_id_char_list`` (src/common/slurm_protocol_defs.c: ``Invalid user id``,
exit 1, before the header)."""

from __future__ import annotations

from cli.main import main

HEADER = "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"


def known(api, *names: str) -> None:
    api.routes[("GET", "/api/users/")] = (200, {"users": list(names)})


def test_squeue_warns_of_each_unknown_name_and_lists_the_others(api, objs, capsys):
    known(api, "alice")
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.job(job_id=4, user="alice")]))
    assert main(["fsched", "squeue", "-u", "alice,nosuch"]) == 0
    out = capsys.readouterr()
    assert out.err == "squeue: error: Invalid user: nosuch\n\n"
    assert out.out.startswith(HEADER) and "alice" in out.out
    assert api.requests[0]["query"] == "name=alice,nosuch"
    assert "user=alice&" in api.requests[1]["query"] + "&"


def test_squeue_of_unknown_names_only_lists_no_job(api, objs, capsys):
    known(api)
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.job(job_id=4, user="alice")]))
    assert main(["fsched", "squeue", "-u", "nosuch"]) == 0
    out = capsys.readouterr()
    assert out.err == "squeue: error: Invalid user: nosuch\n\n"
    assert out.out == HEADER
    assert [r["path"] for r in api.requests] == ["/api/users/"]


def test_squeue_steps_of_unknown_names_only_lists_no_step(api, capsys):
    known(api)
    step = {
        "job_id": 4,
        "step_id": "0",
        "name": "x",
        "partition": "debug",
        "user": "alice",
        "start_time": None,
        "node_list": "node01",
    }
    api.routes[("GET", "/api/steps/")] = (200, {"steps": [step]})
    assert main(["fsched", "squeue", "-s", "-u", "nosuch"]) == 0
    out = capsys.readouterr()
    assert "alice" not in out.out and out.err == "squeue: error: Invalid user: nosuch\n\n"


def test_scancel_refuses_an_unknown_user_before_cancelling(api, capsys):
    known(api)
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [], "errors": []})
    assert main(["fsched", "scancel", "-u", "nosuch"]) == 1
    assert capsys.readouterr().err == "scancel: error: Invalid user name: nosuch\n"
    assert [r["path"] for r in api.requests] == ["/api/users/"]


def test_scancel_of_a_known_user_cancels(api):
    known(api, "alice")
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [1], "errors": []})
    assert main(["fsched", "scancel", "-u", "alice"]) == 0
    assert api.requests[-1]["body"] == {"user": "alice"}


def test_sacct_refuses_an_unknown_user_before_its_header(api, capsys):
    known(api, "alice")
    assert main(["fsched", "sacct", "-u", "alice,nosuch"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err == "sacct: error: Invalid user id: nosuch\n"
    assert [r["path"] for r in api.requests] == ["/api/users/"]


def test_an_older_controller_without_the_users_list_refuses_no_name(api, capsys):
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [1], "errors": []})
    assert main(["fsched", "scancel", "-u", "alice"]) == 0
    assert capsys.readouterr().err == ""


def test_a_number_is_this_host_s_uid_of_a_login(api, objs, capsys):
    """uid_from_string takes a number as a uid (``squeue -u $UID``): asked for, and
    filtered by, that uid's login name."""
    import os
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    known(api, me)
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.job(job_id=4, user=me)]))
    assert main(["fsched", "squeue", "-u", str(os.getuid())]) == 0
    assert capsys.readouterr().err == ""
    assert api.requests[0]["query"] == f"name={me}"
    assert f"user={me}&" in api.requests[1]["query"] + "&"
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [4], "errors": []})
    assert main(["fsched", "scancel", "-u", str(os.getuid())]) == 0
    assert api.requests[-1]["body"] == {"user": me}
    api.routes[("GET", "/api/accounting/jobs/")] = (200, {"jobs": [], "next": None})
    assert main(["fsched", "sacct", "-u", str(os.getuid()), "-X"]) == 0
    assert f"user={me}&" in api.requests[-1]["query"] + "&"
