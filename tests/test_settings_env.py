"""A mistyped setting stops the process with the variable's name (config/env.py); before,
``FSCHED_HTTPS=ture`` meant "off" and ``FSCHED_HTTP_THREADS=four`` a bare ValueError."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import envbool, envfloat, envint, envlevel, envzone

ROOT = Path(__file__).resolve().parents[1]


SPELLINGS = [("1", True), (" Yes ", True), ("ON", True), ("off", False), ("", False)]
BOOLEAN = "expected 1, true, yes, on or 0, false, no, off"


@pytest.mark.parametrize(("value", "expected"), SPELLINGS)
def test_booleans_in_every_usual_spelling(monkeypatch, value, expected):
    monkeypatch.setenv("FSCHED_X", value)
    assert envbool("FSCHED_X", not expected) is expected


def test_unset_gives_the_default(monkeypatch):
    monkeypatch.delenv("FSCHED_X", raising=False)
    assert envbool("FSCHED_X", True) is True
    assert envint("FSCHED_X", 4) == 4 and envfloat("FSCHED_X", 2.5) == 2.5


@pytest.mark.parametrize(
    ("reader", "value", "message"),
    [
        (lambda: envbool("FSCHED_X", False), "ture", f"FSCHED_X='ture': {BOOLEAN}"),
        (lambda: envint("FSCHED_X", 4), "four", "FSCHED_X='four': expected a whole number"),
        (lambda: envint("FSCHED_X", 4), "-1", "FSCHED_X='-1': expected a whole number of at least 0"),
        (lambda: envfloat("FSCHED_X", 2), "2s", "FSCHED_X='2s': expected a number (seconds)"),
        (lambda: envfloat("FSCHED_X", 2), "nan", "FSCHED_X='nan': expected a finite number of at least 0"),
        (lambda: envlevel("FSCHED_X", "INFO"), "loud", "FSCHED_X='LOUD': expected one of DEBUG, INFO"),
    ],
)
def test_a_mistyped_value_names_the_variable(monkeypatch, reader, value, message):
    monkeypatch.setenv("FSCHED_X", value)
    with pytest.raises(ImproperlyConfigured) as refused:
        reader()
    assert str(refused.value).startswith(message)


def test_the_server_refuses_to_start_on_a_mistyped_setting(tmp_path):
    env = {**os.environ, "FSCHED_STATE_DIR": str(tmp_path), "FSCHED_HTTPS": "ture"}
    env.pop("FSCHED_DATABASE_URL", None)
    env.pop("FSCHED_REDIS_URL", None)
    argv = [sys.executable, "manage.py", "check"]
    done = subprocess.run(argv, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert f"FSCHED_HTTPS='ture': {BOOLEAN}" in done.stderr


def test_the_server_port_is_read_the_same_way(monkeypatch):
    from config.server import main as server_main

    monkeypatch.setenv("FSCHED_PORT", "80a")
    with pytest.raises(ImproperlyConfigured, match=r"^FSCHED_PORT='80a': expected a whole number$"):
        server_main([])


@pytest.mark.parametrize("value", ["ten", "0", "-5", "nan", "inf"])
def test_the_cli_refuses_a_mistyped_timeout_by_name(value):
    from cli.client import CliError, env_timeout

    with pytest.raises(CliError) as refused:
        env_timeout({"FSCHED_TIMEOUT": value})
    assert refused.value.message == f"FSCHED_TIMEOUT={value!r}: expected a number of seconds greater than 0"


def test_the_cli_timeout_default_and_spellings():
    from cli.client import env_timeout

    assert env_timeout({}) == env_timeout({"FSCHED_TIMEOUT": " "}) == 60
    assert env_timeout({"FSCHED_TIMEOUT": "2.5"}) == 2.5


def test_a_command_with_a_mistyped_timeout_says_so_in_one_line():
    env = {**os.environ, "FSCHED_TIMEOUT": "ten", "FSCHED_URL": "http://127.0.0.1:9", "FSCHED_TOKEN": "t"}
    argv = [str(Path(sys.executable).parent / "fsched"), "squeue"]
    done = subprocess.run(argv, check=False, env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (
        1,
        "squeue: error: FSCHED_TIMEOUT='ten': expected a number of seconds greater than 0\n",
    )


@pytest.mark.parametrize(
    ("value", "zone"),
    [
        ("Europe/Paris", "Europe/Paris"),
        (":America/New_York", "America/New_York"),
        ("CET-1CEST", "UTC"),
        (":/etc/localtime", "UTC"),
        ("Not/AZone", "UTC"),
        ("", "UTC"),
    ],
)
def test_time_zone_is_the_processes_tz_when_it_names_a_zone(monkeypatch, value, zone):
    monkeypatch.setenv("TZ_UNDER_TEST", value)
    assert envzone("TZ_UNDER_TEST", "UTC") == zone
