"""sacctmgr option parsing (pure) and the CLI's split of names, conditions and settings."""

from __future__ import annotations

import pytest

from cli.sacctmgr import _specs
from limits.core.options import OptionError, apply_option, assoc_option, qos_option, split_option


def test_option_names_follow_sacctmgr():
    assert assoc_option("GrpTRESMins") == ("grp_tres_mins", "tres")
    assert assoc_option("maxwall") == ("max_wall_duration_per_job", "minutes")
    assert qos_option("MaxJobsPU") == ("max_jobs_per_user", "count")
    with pytest.raises(OptionError, match="Unknown option"):
        assoc_option("MaxJobsPerUser")  # a QOS limit, not an association one


def test_values_merge_unset_and_refuse():
    assert apply_option("GrpTRES", "=", "tres", "mem=-1,gres/gpu=2", "cpu=4,mem=1G") == "cpu=4,gres/gpu=2"
    assert apply_option("MaxWall", "=", "minutes", "1-00:00:00", None) == 1440
    assert apply_option("MaxJobs", "=", "count", "-1", 5) is None
    assert apply_option("QOS", "+=", "qoslist", "high", "normal") == "normal,high"
    assert apply_option("QOS", "-=", "qoslist", "normal", "normal,high") == "high"
    assert apply_option("GraceTime", "=", "seconds", "01:30", 0) == 90
    with pytest.raises(OptionError, match="negative"):
        apply_option("MaxJobs", "=", "count", "-4", None)
    with pytest.raises(OptionError, match="does not take"):
        apply_option("MaxJobs", "+=", "count", "4", None)
    assert split_option("QOS+=high") == ("QOS", "+=", "high")


def test_cli_splits_names_conditions_and_settings():
    assert _specs(["name=science", "set", "GrpTRESMins=cpu=100000"]) == (
        ["science"],
        [],
        ["GrpTRESMins=cpu=100000"],
    )
    assert _specs(["where", "name=bob", "account=x", "set", "MaxJobs=2"]) == (
        ["bob"],
        ["account=x"],
        ["MaxJobs=2"],
    )
    assert _specs(["bob", "Account=science"]) == (["bob"], ["Account=science"], [])
