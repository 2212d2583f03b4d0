"""docs/grafana-dashboard.json imports into Grafana and charts the metrics /metrics has."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.django_db

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"


def test_every_panel_charts_metrics_that_exist(demo, api, client):
    # A Grp limit, so that the limits' metrics have a sample.
    body = {"names": ["science"], "options": ["GrpJobs=3"]}
    assert api("admin").post("/api/limits/add/account/", body, format="json").status_code == 200
    exposed = {f.name for f in text_string_to_metric_families(client.get("/metrics").content.decode())}
    board = json.loads(DASHBOARD.read_text())
    # What Grafana's import needs: a data source input that every panel and target uses.
    assert [i["pluginId"] for i in board["__inputs"]] == ["prometheus"]
    charted = set()
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = set(re.findall(r"\bfsched_[a-z_]+\b", target["expr"]))
            assert names, target["expr"]
            assert names <= exposed, f"{panel['title']}: {names - exposed} not at /metrics"
            charted |= names
    # The metrics the issue names are all charted.
    for name in (
        "fsched_nodes",
        "fsched_nodes_power",
        "fsched_jobs",
        "fsched_jobs_pending",
        "fsched_hres_used",
        "fsched_limit_used",
        "fsched_scheduler_last_pass_seconds",
        "fsched_scheduler_backlog",
        "fsched_agents",
    ):
        assert name in charted, name
