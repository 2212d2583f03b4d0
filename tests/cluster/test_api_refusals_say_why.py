"""What the API tells a refused caller: why a token no longer works; no secret of the configuration."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from cluster.models import ClusterConfig
from cluster.services.api_tokens import token_issue

pytestmark = pytest.mark.django_db


def test_an_expired_token_is_told_it_expired(users):
    _token, text = token_issue(users["alice"], days=1, now=timezone.now() - timedelta(days=2))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {text}")
    answer = client.get("/api/whoami/")
    assert answer.status_code == 401
    assert answer.json()["error"].startswith("Token expired: log in again")


def test_no_token_at_all_is_asked_to_log_in(users):
    answer = APIClient().get("/api/whoami/")
    assert answer.status_code == 401
    assert answer.json() == {"error": "Authentication required: run 'fsched login' or set FSCHED_TOKEN"}


def test_configuration_secrets_are_shown_to_staff_only(demo, api):
    cfg = ClusterConfig.current()
    cfg.options = {**cfg.options, "AccountingStoragePass": "s3cret-4713", "JwtKey": "k-4714"}
    cfg.save(update_fields=["options"])
    user_view = api("alice").get("/api/config/").json()["options"]
    assert user_view["AccountingStoragePass"] == user_view["JwtKey"] == "(hidden)"
    assert user_view["ClusterName"] == cfg.options["ClusterName"]
    staff_view = api("admin").get("/api/config/").json()["options"]
    assert staff_view["AccountingStoragePass"] == "s3cret-4713"
