"""Logins are throttled (django-axes), passwords validated, sessions and tokens time out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import Client
from rest_framework.test import APIClient

from cluster.models import ApiToken

ROOT = Path(__file__).resolve().parents[2]
LOCKED = "Account locked: too many failed logins. Try again in 15 minutes."


def token_login(username: str, password: str, address: str = "10.0.0.1"):
    return APIClient(REMOTE_ADDR=address).post(
        "/api/auth/token/", {"username": username, "password": password}, format="json"
    )


def admin_login(client: Client, username: str, password: str):
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password})


def test_the_token_login_locks_after_five_failures(users):
    for _ in range(4):
        assert token_login("alice", "guess").status_code == 401
    assert token_login("alice", "guess").status_code == 429  # the fifth failure locks
    locked = token_login("alice", "alice-pw")  # the right password, too late
    assert locked.status_code == 429
    assert locked.json() == {"error": LOCKED}
    assert not ApiToken.objects.exists()


def test_a_lockout_holds_one_user_at_one_address(users):
    for _ in range(5):
        token_login("alice", "guess")
    # Another user on the same login node, and alice from another, still get in.
    assert token_login("bob", "bob-pw").status_code == 201
    assert token_login("alice", "alice-pw", address="10.0.0.2").status_code == 201
    assert token_login("alice", "alice-pw").status_code == 429


def test_a_success_resets_the_count_and_is_the_last_login(users):
    for _ in range(4):
        token_login("alice", "guess")
    assert token_login("alice", "alice-pw").status_code == 201
    for _ in range(4):
        token_login("alice", "guess")
    assert token_login("alice", "alice-pw").status_code == 201
    users["alice"].refresh_from_db()
    assert users["alice"].last_login is not None


def test_the_admin_login_locks_after_five_failures(users):
    client = Client(REMOTE_ADDR="10.0.0.3")
    for _ in range(4):
        assert admin_login(client, "admin", "guess").status_code == 200  # the form again, with an error
    assert admin_login(client, "admin", "guess").status_code == 429
    locked = admin_login(client, "admin", "admin-pw")
    assert locked.status_code == 429 and locked.content.decode() == LOCKED
    assert "_auth_user_id" not in client.session


def test_a_console_session_is_httponly_and_lasts_twelve_hours(users):
    client = Client()
    assert admin_login(client, "admin", "admin-pw").status_code == 302
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie["httponly"] and cookie["max-age"] == 12 * 3600
    assert not cookie["secure"]  # plain http unless FSCHED_HTTPS says otherwise


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("alice", "too short"),
        ("password123", "too common"),
        ("4815162342", "entirely numeric"),
        ("alice.liddell", "too similar to the email address"),
    ],
)
def test_a_weak_password_is_refused(users, password, why):
    users["alice"].email = "alice.liddell@example.org"
    with pytest.raises(ValidationError, match=why):
        validate_password(password, users["alice"])


def test_a_strong_password_passes(users):
    validate_password("correct-horse-battery-staple", users["alice"])


def test_https_makes_the_cookies_secure(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FSCHED_")}
    env.update(FSCHED_STATE_DIR=str(tmp_path), FSCHED_HTTPS="1", FSCHED_SESSION_HOURS="8")
    probe = (
        "from config import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_AGE)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=False, env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert out.stdout.split() == ["True", "True", str(8 * 3600)], out.stderr
