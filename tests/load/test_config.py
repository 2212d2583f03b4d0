"""The load thresholds in a configuration being loaded: the spec's own partitions.conf
(its double space and the NodeName line after the partition's included), and a bad
threshold refusing the start and the reconfigure with its file:line and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.core.slurmconf import load_slurm_conf
from cluster.models import ClusterConfig, Partition
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError
from load.selectors import thresholds_by_node

SLURM_CONF = "ClusterName=test\nSlurmctldHost=ctl\nInclude partitions.conf\n"
# The spec's file as written: its long line and double space are the point.
EXAMPLE = (
    "\n#\n# PARTITION partition-U7KH5\n"
    "PartitionName=partition-U7KH5 Nodes=compute1 Default=YES "
    "LoadSchedMem=1300 LoadStopMem=1200  LoadSchedUt=80 LoadStopUt=90\n"
    "#   DUMMY\n\n#   NODES\n"
    "NodeName=compute1 CPUs=16 RealMemory=13926  Weight=1 State=CLOUD\n"
)


def write(tmp_path: Path, partitions: str) -> Path:
    (tmp_path / "partitions.conf").write_text(partitions)
    path = tmp_path / "slurm.conf"
    path.write_text(SLURM_CONF)
    return path


def test_the_spec_s_example_loads(db, tmp_path):
    path = write(tmp_path, EXAMPLE)
    config_load(path=path)
    assert Partition.objects.get().name == "partition-U7KH5"
    node = thresholds_by_node(load_slurm_conf(path))["compute1"]
    assert node.keys() == [
        ("LoadSchedMem", 1300),
        ("LoadStopMem", 1200),
        ("LoadSchedUt", 80),
        ("LoadStopUt", 90),
    ]


def test_a_node_in_two_partitions_takes_the_later_one_s(tmp_path):
    later = EXAMPLE + "PartitionName=later Nodes=compute1 LoadSchedR1m=2.5\n"
    node = thresholds_by_node(load_slurm_conf(write(tmp_path, later)))["compute1"]
    assert (node.partition, node.keys()) == ("later", [("LoadSchedR1m", 2.5)])


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("LoadSchedMem=1300M", "LoadSchedMem=1300M: must be an integer (no unit may be written)"),
        ("LoadSchedMem=1100", "LoadStopMem=1200: must be below LoadSchedMem=1100"),
        ("LoadSchedUt=95", "LoadStopUt=90: must be above LoadSchedUt=95"),
        ("LoadStopR1m=3", "LoadStopR1m=3: needs LoadSchedR1m"),
    ],
)
def test_a_bad_threshold_refuses_the_load_with_file_line_and_reason(db, tmp_path, change, reason):
    path = write(tmp_path, EXAMPLE)
    config_load(path=path)
    version = ClusterConfig.current().version
    key = change.split("=")[0] + "="
    written = next((w for w in EXAMPLE.split() if w.startswith(key)), None)
    bad = (
        EXAMPLE.replace(written, change)
        if written
        else EXAMPLE.replace("LoadStopUt=90", f"LoadStopUt=90 {change}")
    )
    write(tmp_path, bad)
    with pytest.raises(ServiceError) as refused:
        config_load(path=path)
    assert f"partitions.conf:4: PartitionName=partition-U7KH5: {reason}" in str(refused.value)
    assert ClusterConfig.current().version == version  # the configuration in force is kept
