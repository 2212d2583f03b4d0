"""slurm.conf's GresTypes and Gres=, and gres.conf beside it: parsed by the controller's
parser (which the agent uses too), every problem a file:line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.nodeconf import load_rules
from cluster.core.slurmconf import ConfigError, load_slurm_conf

BASE = """\
ClusterName=c
SlurmctldHost=h
GresTypes=gpu,mps
NodeName=n[1-2] CPUs=4 Gres=gpu:a100:2,gpu:v100:2
NodeName=n3 CPUs=4 Gres=gpu:4,mps:100
NodeName=n4 CPUs=4
PartitionName=p Nodes=n[1-4] Default=YES
"""


def write(tmp_path: Path, gres_conf: str | None = None, conf: str = BASE) -> Path:
    (tmp_path / "slurm.conf").write_text(conf)
    if gres_conf is not None:
        (tmp_path / "gres.conf").write_text(gres_conf)
    return tmp_path / "slurm.conf"


def errors(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_slurm_conf(path)
    return [str(p) for p in caught.value.problems]


def test_gres_conf_gives_each_node_its_devices_in_file_order(tmp_path):
    path = write(
        tmp_path,
        "AutoDetect=off\n"
        "NodeName=n[1-2] Name=gpu Type=v100 File=/dev/nvidia[2-3]\n"
        "NodeName=n[1-2] Name=gpu Type=a100 File=/dev/nvidia0,/dev/nvidia1\n"
        "NodeName=n3 Name=gpu File=/dev/nvidia[0-3]\n"
        "NodeName=n3 Name=mps Count=100\n",
    )
    conf = load_slurm_conf(path)
    n1, n3, n4 = conf.node("n1"), conf.node("n3"), conf.node("n4")
    # gres.conf's order decides the indices: the v100 lines come first.
    assert n1.gres == "gpu:v100:2,gpu:a100:2"
    assert [(d.type, d.index, d.file) for d in n1.gres_devices] == [
        ("v100", 0, "/dev/nvidia2"),
        ("v100", 1, "/dev/nvidia3"),
        ("a100", 2, "/dev/nvidia0"),
        ("a100", 3, "/dev/nvidia1"),
    ]
    assert n3.gres == "gpu:4,mps:100"
    assert [d.file for d in n3.gres_devices] == [f"/dev/nvidia{i}" for i in range(4)]
    assert n4.gres == "" and n4.gres_devices == ()
    assert str(tmp_path / "gres.conf") in conf.files


def test_without_gres_conf_the_counts_of_gres_are_the_devices(tmp_path):
    conf = load_slurm_conf(write(tmp_path))
    assert [d.index for d in conf.node("n3").gres_devices] == [0, 1, 2, 3]
    assert conf.node("n1").gres == "gpu:a100:2,gpu:v100:2"


def test_a_relative_file_is_in_the_configuration_directory(tmp_path):
    conf = load_slurm_conf(write(tmp_path, "NodeName=n3 Name=gpu File=gpus/nvidia[0-3]\n"))
    assert conf.node("n3").gres_devices[1].file == str(tmp_path.resolve() / "gpus" / "nvidia1")


@pytest.mark.parametrize(
    ("gres_conf", "expected"),
    [
        ("AutoDetect=nvml\n", "gres.conf:1: AutoDetect=nvml: not supported"),
        (
            "\nNodeName=n3 Name=gpu File=/dev/nvidia[0-2]\n",
            "gres.conf:2: gres.conf has gpu:3 but Gres= says gpu:4",
        ),
        ("NodeName=n3 Name=gpu File=/dev/nvidia[0-3] Count=3\n", "gres.conf:1: Count=3 does not match"),
        ("NodeName=n9 Name=gpu Count=1\n", "gres.conf:1: NodeName: n9 not defined in slurm.conf"),
        ("Name=fpga Count=2\n", "gres.conf:1: Name=fpga: not in slurm.conf's GresTypes"),
        ("NodeName=n3 Name=gpu File=/dev/nvidia[0-3] Colour=red\n", "gres.conf:1: Colour=red: unknown"),
        (
            "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-2]\n"
            "NodeName=n1 Name=gpu Type=v100 File=/dev/x0\n",
            "gres.conf:1: gres.conf has gpu:a100:3 but Gres= says gpu:a100:2 for node n1",
        ),
    ],
)
def test_gres_conf_problems_name_their_line(tmp_path, gres_conf, expected):
    found = errors(write(tmp_path, gres_conf))
    assert any(e.startswith(expected) for e in found), found


def test_gres_on_a_node_must_be_in_gres_types(tmp_path):
    conf = BASE.replace("GresTypes=gpu,mps", "GresTypes=gpu")
    assert errors(write(tmp_path, conf=conf)) == ["slurm.conf:5: Gres=gpu:4,mps:100: mps is not in GresTypes"]


@pytest.mark.parametrize("gres", ["gpu:a:b:2", "gpu:-1", "gpu:2,gpu:2", ":2"])
def test_a_malformed_gres_is_refused_with_its_line(tmp_path, gres):
    found = errors(
        write(tmp_path, conf=BASE.replace("NodeName=n4 CPUs=4", f"NodeName=n4 CPUs=4 Gres={gres}"))
    )
    assert len(found) == 1 and found[0].startswith(f"slurm.conf:6: Gres={gres}: "), found


def test_the_agent_reads_the_same_files_and_refuses_the_same_errors(tmp_path):
    path = write(tmp_path, "AutoDetect=rsmi\n")
    with pytest.raises(ConfigError, match=r"gres\.conf:1: AutoDetect=rsmi"):
        load_rules(path)
    (tmp_path / "gres.conf").write_text("AutoDetect=off\nNodeName=n3 Name=gpu File=/dev/nvidia[0-3]\n")
    assert load_rules(path).gres_devices["n3"][3].file == "/dev/nvidia3"
