"""The token check reads the configuration's revision in its own statement, and the
request's first ClusterConfig.current() takes it: one round trip less per API request."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.models import ClusterConfig

pytestmark = pytest.mark.django_db


def _revision_reads(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT revision")]


def test_an_api_submission_reads_the_revision_only_with_the_token(api, demo):
    alice = api("alice")
    spec = {"wrap": "true", "work_dir": "/tmp", "hold": True}
    assert alice.post("/api/jobs/", spec, format="json").status_code == 201  # warm the caches
    with CaptureQueriesContext(connection) as queries:
        assert alice.post("/api/jobs/", spec, format="json").status_code == 201
    token_check = [q["sql"] for q in queries.captured_queries if "revoked" in q["sql"]]
    assert len(token_check) == 1 and "SELECT revision" in token_check[0]
    assert _revision_reads(queries) == [], [q["sql"] for q in queries.captured_queries]


def test_the_noted_revision_serves_once(demo):
    ClusterConfig.current()
    ClusterConfig.note_revision(ClusterConfig.current().revision)
    with CaptureQueriesContext(connection) as queries:
        ClusterConfig.current()
        ClusterConfig.current()
    assert len(_revision_reads(queries)) == 1


def test_a_change_in_the_request_is_never_hidden_by_what_it_noted(demo):
    before = ClusterConfig.current()
    ClusterConfig.note_revision(before.revision)
    ClusterConfig.touch()
    assert ClusterConfig.current().revision != before.revision
    cfg = ClusterConfig.for_update()
    ClusterConfig.note_revision(cfg.revision)
    cfg.cluster_name = "renamed"
    cfg.save()
    assert ClusterConfig.current().cluster_name == "renamed"


def test_another_request_never_takes_what_an_earlier_one_noted(api, demo):
    from django.core.signals import request_started
    from django.db import close_old_connections

    stale = ClusterConfig.current().revision
    ClusterConfig.note_revision(stale)
    request_started.disconnect(close_old_connections)  # as Django's test client does
    try:
        request_started.send(sender=None)
    finally:
        request_started.connect(close_old_connections)
    ClusterConfig.objects.filter(pk=1).update(revision="changed-elsewhere")
    assert ClusterConfig.current().revision == "changed-elsewhere"
