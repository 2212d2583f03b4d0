"""The limits page's TRES usage with units and its QOS limits (#15 point 7)."""

from __future__ import annotations

from limits.console_rows import qos_rows, tres_minutes
from limits.core.policy import QOS, QOSLimits
from limits.core.usage import UsageRecord


def test_decayed_tres_minutes_read_with_units():
    record = UsageRecord(tres_seconds={"cpu": 7200.0, "mem": 60.0 * 2048, "gres/gpu": 150.0, "node": 30.0})
    # node: half a minute rounds down to none used, so it is not listed.
    assert tres_minutes(record) == ["cpu: 120 CPU-min", "mem: 2G-min", "gres/gpu: 2 gpu-min"]
    assert tres_minutes(UsageRecord()) == []


def test_qos_rows_list_the_limits_set_in_sacctmgr_s_words():
    normal = QOS(
        "normal",
        priority=10,
        flags=frozenset({"DenyOnLimit"}),
        limits=QOSLimits(
            grp_tres={"cpu": 64, "mem": 102400}, max_wall_duration_per_job=90, max_jobs_per_user=4
        ),
    )
    rows = qos_rows([QOS("zeta"), normal])
    assert [r["name"] for r in rows] == ["normal", "zeta"]
    assert rows[0]["limits"] == ["GrpTRES=cpu=64,mem=100G", "MaxWall=01:30:00", "MaxJobsPU=4"]
    assert rows[0]["flags"] == "DenyOnLimit" and rows[1]["limits"] == []
