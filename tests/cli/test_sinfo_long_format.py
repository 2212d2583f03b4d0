"""sinfo ``-O``/``--Format`` (``sinfo -O nodehost,cpusstate``, which scripts use): was
"unrecognized option".  Names, widths and the treatment of an unknown name as sinfo's
``_parse_long_format`` and ``_parse_long_token`` have them (src/sinfo/opts.c, 23.11)."""

from __future__ import annotations

import pytest

from cli.main import main
from cli.sinfo_long_format import to_format


def test_names_widths_justification_and_suffixes():
    assert to_format("NodeList,CPUs") == ("%20N%20c", [])
    assert to_format("partition:9 ,available:.5 ,nodelist:0") == ("%9P %.5a %N", [])
    assert to_format("nodehost:10|,statelong:.11%") == ("%10n|%.11T%%", [])


def test_an_unknown_name_prints_only_its_suffix():
    assert to_format("nodes:4,bogus:5|,comment") == ("%4D|", ["bogus", "comment"])
    with pytest.raises(ValueError, match="Format long option lacks specification"):
        to_format("")


def cluster(api, objs):
    api.routes[("GET", "/api/partitions/")] = (200, api.page([objs.partition("debug")]))
    nodes = [objs.node("node01", cpus_alloc=1, state_sinfo="mixed", state_short="mix"), objs.node("node02")]
    api.routes[("GET", "/api/nodes/")] = (200, api.page(nodes))


def test_over_http_node_centric(api, capsys, objs):
    cluster(api, objs)
    assert main(["fsched", "sinfo", "-N", "-O", "nodehost:8,cpusstate:.14,bogus: ,statelong"]) == 0
    out = capsys.readouterr()
    assert out.err == "sinfo: error: Invalid job format specification: bogus\n"
    assert out.out.splitlines() == [
        # NodeHost: the host the node's agent runs on (both here on host1).
        "HOSTNAMES CPUS(A/I/O/T) STATE               ",
        "host1          1/3/0/4 mixed               ",
        "host1          0/4/0/4 idle                ",
    ]


def test_the_last_of_o_and_O_stands(api, capsys, objs):
    cluster(api, objs)
    assert main(["fsched", "sinfo", "-o", "%P", "--Format=nodes:5"]) == 0
    assert capsys.readouterr().out == "NODES\n2    \n"
    assert main(["fsched", "sinfo", "-O", "nodes:5", "-o", "%P"]) == 0
    assert capsys.readouterr().out == "PARTITION\ndebug*\n"


def test_sockets_cores_threads_and_the_partition_s_job_factor(api, capsys, objs):
    cluster(api, objs)
    assert to_format("sockets:3,cores:3,threads:3,priorityjobfactor:3") == ("%3X%3Y%3Z%3I", [])
    assert main(["fsched", "sinfo", "-o", "%X %Y %Z %I %z"]) == 0
    assert capsys.readouterr().out == "SOCKETS CORES THREADS PRIO_JOB_FACTOR S:C:T\n4 1 1 1 4:1:1\n"


def test_an_unknown_letter_is_printed_as_written_and_sinfo_goes_on(api, capsys, objs):
    """src/sinfo/opts.c, _parse_format: fprintf "Invalid node format specification: %c"
    (no "sinfo: error:"), the directive printed as it was written, exit 0."""
    cluster(api, objs)
    assert main(["fsched", "sinfo", "-o", "%P|%.5q|%D"]) == 0
    out = capsys.readouterr()
    assert out.err == "Invalid node format specification: q\n"
    assert out.out == "PARTITION|%.5q|NODES\ndebug*|%.5q|2\n"


def test_the_fields_that_have_no_o_letter(api, capsys, objs):
    # AllocMem, StateComplete (the state with its flags, lower case), Version, and the
    # partition's AllocNodes, PreemptMode and MaxCPUsPerNode as fsched has them (sinfo's
    # print.c: their headers and the values without a partition limit).
    api.routes[("GET", "/api/partitions/")] = (200, api.page([objs.partition("debug")]))
    nodes = [
        objs.node("node01", cpus_alloc=1, alloc_memory=500, state="MIXED", slurmd_version="23.11.0"),
        objs.node("node02", state="IDLE+DRAIN"),
    ]
    api.routes[("GET", "/api/nodes/")] = (200, api.page(nodes))
    fields = "NodeList:7,AllocMem:.9,StateComplete:.12,Version:8,AllocNodes:.11,PreemptMode:.13"
    assert main(["fsched", "sinfo", "-N", "-O", fields + ",MaxCPUsPerNode:18"]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    tail = f"{'all':>11}{'OFF':>13}{'UNLIMITED':<18}"
    assert out.out.splitlines() == [
        "NODELIST ALLOCMEMSTATECOMPLETVERSION  ALLOCNODES PREEMPT_MODEMAX_CPUS_PER_NODE ",  # cut to 12
        f"node01 {'500':>9}{'mixed':>12}{'23.11.0':<8}{tail}",
        f"node02 {'0':>9}{'idle+drain':>12}{'N/A':<8}{tail}",
    ]


def test_extra_and_gres_used(api, capsys, objs):
    api.routes[("GET", "/api/partitions/")] = (200, api.page([objs.partition("debug")]))
    nodes = [objs.node("node01", extra="rack=4", gres_used="gpu:tesla:1(IDX:0)"), objs.node("node02")]
    api.routes[("GET", "/api/nodes/")] = (200, api.page(nodes))
    assert main(["fsched", "sinfo", "-N", "-h", "-O", "NodeList:7,Extra:12,GresUsed:20"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"node01 {'rack=4':<12}{'gpu:tesla:1(IDX:0)':<20}",
        f"node02 {'(null)':<12}{'(null)':<20}",
    ]
