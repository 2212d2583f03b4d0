"""A reservation of an HRES amount on a real controller and agent, through the real CLI:
``licenses=natural(low1):30`` lets the reserved user's job take the reserved amount while
another user's identical request pends (Slurm's hres.html, "Examples": Reserve HRES)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_hres_e2e import hres_cluster  # noqa: F401 - hres.html's resources.yaml

pytestmark = pytest.mark.e2e


def test_reserved_amount_serves_the_reservation_user_only(hres_cluster, tmp_path: Path):  # noqa: F811
    c = hres_cluster
    me = json.loads((c.state_dir / "cli.json").read_text())["username"]
    c.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        "User.objects.filter(username='mallory').exists() or User.objects.create_user('mallory')",
    )
    mallory = {"FSCHED_TOKEN": c.manage("fsched_token", "create", "mallory").strip()}
    made = c.cli(
        "scontrol", "create", "reservation", "ReservationName=hold30", "StartTime=now", "Duration=60",
        f"Users={me}", "licenses=natural(low1):30",
    ).stdout  # fmt: skip
    assert made.strip() == "Reservation created: hold30"
    shown = c.cli("scontrol", "show", "reservation", "hold30").stdout
    assert "Licenses=natural(low1):30" in shown and "State=ACTIVE" in shown

    # natural has 100 on low1 (node[01-16]) and 50 on top: 71 fits only on low1, where
    # 30 of the 100 are now held for the reservation.
    args = ("sbatch", "-p", "all", "-w", "node01", "-L", "natural:71", "-t", "5", "--wrap", "sleep 120")
    other = int(c.cli(*args, cwd=tmp_path, env=mallory).stdout.split()[-1])
    denied = c.cli(*args, "--reservation=hold30", cwd=tmp_path, env=mallory, check=False)
    assert "Access denied to requested reservation" in denied.stderr
    mine = int(c.cli(*args, "--reservation=hold30", cwd=tmp_path).stdout.split()[-1])

    c.wait_for("the reservation's job runs", lambda: c.jobs(mine)[mine]["state"] == "RUNNING")
    job = c.jobs(other)[other]
    assert (job["state"], job["reason"]) == ("PENDING", "Licenses")
    c.cli("scancel", str(mine), str(other))
    c.cli("scontrol", "delete", "ReservationName=hold30")
    assert "No reservations in the system" in c.cli("scontrol", "show", "reservation").stdout
