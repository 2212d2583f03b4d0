"""The reason text of Slurm's squeue/scontrol: the code alone, or Slurm's long form for
ReqNodeNotAvail."""

from __future__ import annotations

import pytest

from slurmwords.reasons import scontrol_reason, slurm_reason, unavailable_nodes


@pytest.mark.parametrize(
    ("reason", "detail", "squeue", "scontrol"),
    [
        ("QOSGrpJobsLimit", "GrpJobs=2 (QOS qjobs): 2 running", "QOSGrpJobsLimit", "QOSGrpJobsLimit"),
        ("Licenses", "flat: 1 requested, layer top has 0 free", "Licenses", "Licenses"),
        ("Resources", "", "Resources", "Resources"),
        ("", "", "None", "None"),
        (
            "ReqNodeNotAvail",
            "UnavailableNodes:node01,node02,node04",
            "ReqNodeNotAvail, UnavailableNodes:node[01-02,04]",
            "ReqNodeNotAvail,_UnavailableNodes:node[01-02,04]",
        ),
        (
            "ReqNodeNotAvail",
            "Reserved for maintenance",
            "ReqNodeNotAvail, Reserved for maintenance",
            "ReqNodeNotAvail,_Reserved_for_maintenance",
        ),
        (
            "ReqNodeNotAvail",
            "May be reserved for other job",
            "ReqNodeNotAvail, May be reserved for other job",
            "ReqNodeNotAvail,_May_be_reserved_for_other_job",
        ),
        ("ReqNodeNotAvail", "", "ReqNodeNotAvail", "ReqNodeNotAvail"),
        ("BadConstraints", "required node node01 is too small", "BadConstraints", "BadConstraints"),
    ],
)
def test_reason_as_squeue_and_scontrol_print_it(reason, detail, squeue, scontrol):
    assert slurm_reason(reason, detail) == squeue
    assert scontrol_reason(reason, detail) == scontrol


def test_unavailable_nodes_reads_folded_and_listed_names():
    assert unavailable_nodes("UnavailableNodes:node[01-02],gpu1") == ["node01", "node02", "gpu1"]
    assert unavailable_nodes("UnavailableNodes:node01,node03") == ["node01", "node03"]
    assert unavailable_nodes("Reserved for maintenance") == []
    assert unavailable_nodes("UnavailableNodes:node[01") == ["node[01"]
