"""sacct -B/--batch-script and --env-vars (were invalid options): each job's script or
environment in sacct's own block ("Batch Script for N", a rule of 80 dashes, the text or
NONE; src/sacct/options.c _print_script/_print_env), no header; NONE unless
AccountingStoreFlags keeps them, as slurmdbd stores them only then."""

from __future__ import annotations

from cli.main import main
from tests.cli.test_sacct import URL, job

RULE = "-" * 80


def routes(api, flags: str) -> None:
    api.routes[("GET", "/api/config/")] = (
        200,
        {"cluster_name": "c", "options": {"AccountingStoreFlags": flags}},
    )
    api.routes[("GET", URL)] = (200, {"jobs": [job(4, "COMPLETED"), job(5, "COMPLETED")], "next": None})
    api.routes[("GET", "/api/jobs/4/script/")] = (
        200,
        {"job_id": 4, "script": "#!/bin/sh\nhostname\n", "environment": {"A": "1", "B": "x y"}},
    )
    api.routes[("GET", "/api/jobs/5/script/")] = (403, {"error": "Access/permission denied"})


def test_scripts_when_the_flag_keeps_them(api, capsys):
    routes(api, "job_comment,job_script")
    assert main(["fsched", "sacct", "-B", "-j", "4,5"]) == 0
    assert capsys.readouterr().out == (
        f"Batch Script for 4\n{RULE}\n#!/bin/sh\nhostname\n\nBatch Script for 5\n{RULE}\nNONE\n\n"
    )


def test_environment_when_the_flag_keeps_it(api, capsys):
    routes(api, "job_env")
    assert main(["fsched", "sacct", "--env-vars", "-j", "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Environment used for 4 (must be batch to display)\n{RULE}\nA=1\nB=x y\n\n")


def test_none_without_the_flag_and_no_script_asked_for(api, capsys):
    routes(api, "")
    assert main(["fsched", "sacct", "--batch-script", "-j", "4"]) == 0
    assert capsys.readouterr().out.startswith(f"Batch Script for 4\n{RULE}\nNONE\n\n")
    assert not [r for r in api.requests if r["path"].endswith("/script/")]
