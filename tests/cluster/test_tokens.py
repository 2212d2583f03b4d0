"""API tokens: stored as digests, new per login, revocable, expiring; the schema needs one."""

from __future__ import annotations

import importlib
import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.test import APIClient

from cluster.api.auth import TokenAuthentication
from cluster.models import ApiToken
from cluster.services.api_tokens import token_issue


def login(username: str = "alice", password: str = "alice-pw", **extra):  # noqa: S107 - a test user
    return APIClient().post(
        "/api/auth/token/", {"username": username, "password": password, **extra}, format="json"
    )


def whoami(token: str, keyword: str = "Token"):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{keyword} {token}")
    return client.get("/api/whoami/")


def test_a_login_returns_a_new_working_token_each_time(users):
    first, second = login(), login()
    assert first.status_code == second.status_code == 201
    assert first.json()["token"] != second.json()["token"]
    for answer in (first, second):
        assert whoami(answer.json()["token"]).json() == {"username": "alice", "is_staff": False}
    expires = ApiToken.objects.get(prefix=first.json()["token"].split(".")[0]).expires
    assert timedelta(days=29) < expires - timezone.now() <= timedelta(days=30)


def test_the_bearer_form_is_accepted(users):
    assert whoami(login().json()["token"], "Bearer").json()["username"] == "alice"


def test_the_database_holds_no_usable_token(users):
    text = login().json()["token"]
    prefix, secret = text.split(".")
    assert len(prefix) == 10 and len(secret) >= 43  # 32 random bytes
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")  # noqa: S608
        stored = " ".join(str(value) for row in cursor.fetchall() for value in row)
    assert prefix in stored
    assert secret not in stored and text not in stored


def test_a_wrong_secret_with_a_real_prefix_is_refused(users):
    prefix = login().json()["token"].split(".")[0]
    assert whoami(f"{prefix}.{'A' * 43}").status_code == 401
    assert whoami(prefix).status_code == 401


def test_a_revoked_token_gets_401(users):
    text = login().json()["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {text}")
    answer = client.delete("/api/auth/token/")
    assert answer.status_code == 200 and answer.json()["revoked"] == text.split(".")[0]
    assert whoami(text).status_code == 401
    with pytest.raises(exceptions.AuthenticationFailed, match="Token revoked") as failure:
        TokenAuthentication().authenticate_credentials(text)
    assert failure.value.get_codes() == "token_revoked"


def test_an_expired_token_gets_401(users):
    _token, text = token_issue(users["alice"], days=1, now=timezone.now() - timedelta(days=1, seconds=1))
    assert whoami(text).status_code == 401
    with pytest.raises(exceptions.AuthenticationFailed, match="Token expired"):
        TokenAuthentication().authenticate_credentials(text)
    _token, live = token_issue(users["alice"], days=1, now=timezone.now() - timedelta(hours=23))
    assert whoami(live).status_code == 200


def test_a_token_for_ever_when_asked(users):
    text = login(days=0).json()["token"]
    assert ApiToken.objects.get(prefix=text.split(".")[0]).expires is None


@pytest.mark.parametrize("days", ["30", -1, 10**6, True, 1.5])
def test_a_bad_lifetime_is_refused_and_issues_nothing(users, days):
    answer = login(days=days)
    assert answer.status_code == 400 and answer.json()["field"] == "days"
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("body", [{}, {"username": "alice"}, {"username": ["alice"], "password": "x"}])
def test_a_login_without_credentials_is_refused(users, body):
    answer = APIClient().post("/api/auth/token/", body, format="json")
    assert answer.status_code == 400 and "required" in answer.json()["error"]


def test_logout_without_a_token_is_401(users):
    assert APIClient().delete("/api/auth/token/").status_code == 401


def test_the_schema_and_the_docs_need_a_login(users, api):
    assert APIClient().get("/api/schema/").status_code == 401
    assert api("alice").get("/api/schema/").status_code == 200
    docs = APIClient().get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/login/")
    session = APIClient()
    session.force_login(users["alice"])
    assert session.get("/api/docs/").status_code == 200


def test_the_management_command_creates_lists_and_revokes(users):
    out, err = io.StringIO(), io.StringIO()
    call_command("fsched_token", "create", "bob", "--days", "2", "--name", "ci", stdout=out, stderr=err)
    text = out.getvalue().strip()
    assert whoami(text).json()["username"] == "bob"
    prefix = text.split(".")[0]
    assert prefix in err.getvalue()

    listing = io.StringIO()
    call_command("fsched_token", "list", "bob", stdout=listing)
    assert prefix in listing.getvalue() and "ci" in listing.getvalue()
    assert text.split(".")[1] not in listing.getvalue()

    call_command("fsched_token", "revoke", "bob", prefix, stdout=io.StringIO())
    assert whoami(text).status_code == 401
    with pytest.raises(CommandError, match="No token with prefix nope for user bob"):
        call_command("fsched_token", "revoke", "bob", "nope")
    with pytest.raises(CommandError, match="no user named 'carol'"):
        call_command("fsched_token", "create", "carol")


def test_revoke_without_prefixes_revokes_every_token_of_the_user(users):
    texts = [login().json()["token"] for _ in range(2)]
    bobs = login("bob", "bob-pw").json()["token"]
    out = io.StringIO()
    call_command("fsched_token", "revoke", "alice", stdout=out)
    assert "Revoked 2 token(s) of alice" in out.getvalue()
    assert [whoami(t).status_code for t in texts] == [401, 401]
    assert whoami(bobs).status_code == 200


def test_bootstrap_writes_a_fresh_token_and_revokes_the_last(db, tmp_path, monkeypatch, settings):
    settings.STATE_DIR = tmp_path / "state"  # where it creates the keys
    creds = tmp_path / "cli" / "cli.json"
    monkeypatch.setenv("FSCHED_CLI_CONFIG", str(creds))
    out = io.StringIO()
    call_command("fsched_bootstrap", "--username", "ops", stdout=out)
    first = json.loads(creds.read_text())["token"]
    assert creds.stat().st_mode & 0o777 == 0o600 and creds.parent.stat().st_mode & 0o777 == 0o700
    assert whoami(first).json() == {"username": "ops", "is_staff": True}
    call_command("fsched_bootstrap", "--username", "ops", stdout=io.StringIO())
    second = json.loads(creds.read_text())["token"]
    assert second != first
    assert whoami(first).status_code == 401 and whoami(second).status_code == 200
    password = out.getvalue().split("password: ")[1].split()[0]
    assert login("ops", password).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_the_old_plain_token_table_is_dropped():
    migration = importlib.import_module("cluster.migrations.0007_drop_plain_tokens")
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, user_id integer)")
        cursor.execute("INSERT INTO authtoken_token VALUES ('0123456789abcdef0123456789abcdef01234567', 1)")
    with connection.schema_editor() as editor:
        migration.drop_plain_tokens(None, editor)
    assert "authtoken_token" not in connection.introspection.table_names()
