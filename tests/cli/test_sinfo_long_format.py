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
    assert to_format("nodes:4,bogus:5|,version") == ("%4D|", ["bogus", "version"])
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
