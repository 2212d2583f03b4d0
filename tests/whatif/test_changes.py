"""The what-if's changes to a copy of the configuration files (whatif/core)."""

from __future__ import annotations

import pytest
import yaml

from whatif.core import changes
from whatif.core.changes import ChangeError
from whatif.core.offer import make_b, offers

CONF = """# power saving
SuspendTime=300  # idle seconds
ResumeTimeout=60
NodeName=n[1-4] CPUs=4
PartitionName=batch Nodes=n[1-4] SuspendTime=600
Include partitions.conf
"""
RESOURCES = """- resource: flat
  mode: MODE_2
  layers:
    - layer_name: top # comment
      nodes: ["n[1-4]"]
      count: 24
    - layer_name: low1
      nodes: ["n[1-2]"]
      count: 12
"""
ACCOUNTS = """Cluster - 'demo'
QOS - 'normal':Priority=0:MaxTRESPerUser=cpu=8
Parent - 'root'
Account - 'sci':Description='science: dept':Organization='sci':GrpTRES=cpu=100
Parent - 'sci'
User - 'bob':DefaultAccount='sci':MaxJobs=4
"""
FILES = {
    "slurm.conf": CONF,
    "partitions.conf": "SuspendRate=5\n",
    "resources.yaml": RESOURCES,
    "accounts.cfg": ACCOUNTS,
}


def test_conf_value_reads_global_keys_not_partition_ones():
    assert changes.conf_value(FILES, "SuspendTime") == "300"
    assert changes.conf_value(FILES, "suspendrate") == "5"
    assert changes.conf_value(FILES, "SuspendTimeout") is None


def test_set_conf_key_edits_in_place_keeps_comment_and_partition_line():
    out = changes.set_conf_key(FILES, "SuspendTime", "900")
    lines = out["slurm.conf"].splitlines()
    assert lines[1] == "SuspendTime=900 # idle seconds"
    assert "PartitionName=batch Nodes=n[1-4] SuspendTime=600" in lines
    assert FILES["slurm.conf"] == CONF  # the given files are left alone


def test_set_conf_key_in_the_include_that_holds_it_appends_when_absent_removes_when_empty():
    assert changes.set_conf_key(FILES, "SuspendRate", "9")["partitions.conf"] == "SuspendRate=9\n"
    assert changes.set_conf_key(FILES, "SuspendTimeout", "30")["slurm.conf"].endswith("\nSuspendTimeout=30\n")
    assert "ResumeTimeout" not in changes.set_conf_key(FILES, "ResumeTimeout", "")["slurm.conf"]


def test_set_conf_key_refuses_a_value_with_spaces():
    with pytest.raises(ChangeError, match="SuspendTime"):
        changes.set_conf_key(FILES, "SuspendTime", "3 NodeName=x")


def test_layer_counts_and_set_layer_count():
    assert changes.layer_counts(FILES) == [("flat", "top", 24), ("flat", "low1", 12)]
    out = changes.set_layer_count(FILES, "flat", "low1", 3)
    assert yaml.safe_load(out["resources.yaml"])[0]["layers"][1]["count"] == 3
    with pytest.raises(ChangeError, match="flat/none"):
        changes.set_layer_count(FILES, "flat", "none", 3)
    with pytest.raises(ChangeError, match="0 or more"):
        changes.set_layer_count(FILES, "flat", "top", -1)


def test_limits_read_and_set_with_quoted_colons_kept():
    limits = changes.dump_limits(FILES)
    assert limits[("QOS", "normal")]["maxtresperuser"] == "cpu=8"
    assert limits[("Account", "sci")]["grptres"] == "cpu=100"
    out = changes.set_limit(FILES, "Account", "sci", "GrpTRES", "cpu=50")
    assert (
        "Account - 'sci':Description='science: dept':Organization='sci':GrpTRES=cpu=50" in out["accounts.cfg"]
    )
    out = changes.set_limit(FILES, "QOS", "normal", "MaxTRESPerUser", "")
    assert "QOS - 'normal':Priority=0\n" in out["accounts.cfg"]
    with pytest.raises(ChangeError, match=r"not in accounts\.cfg"):
        changes.set_limit(FILES, "QOS", "high", "GrpJobs", "3")


def test_make_b_applies_only_what_differs_and_lists_the_changes():
    keys = {o.label: o.key for o in offers(FILES)}
    posted = {
        keys["SuspendTime"]: "600",
        keys["ResumeTimeout"]: "60",  # as in A: no change
        keys["flat / top"]: "30",
        keys["QOS normal MaxJobsPerUser"]: "2",
    }
    files_b, done, errors = make_b(FILES, posted)
    assert errors == []
    assert done == [
        ["SuspendTime", "300", "600"],
        ["flat / top", "24", "30"],
        ["QOS normal MaxJobsPerUser", "", "2"],
    ]
    assert "SuspendTime=600" in files_b["slurm.conf"]
    assert "MaxJobsPerUser=2" in files_b["accounts.cfg"]


def test_make_b_reports_every_bad_value():
    keys = {o.label: o.key for o in offers(FILES)}
    _, done, errors = make_b(FILES, {keys["flat / top"]: "many", keys["Account sci GrpTRES"]: "cpu=1 x"})
    assert done == []
    assert errors == [
        "flat/top: count must be a whole number, not 'many'",
        "Account sci GrpTRES: a value without spaces, ':' or quotes: 'cpu=1 x'",
    ]
