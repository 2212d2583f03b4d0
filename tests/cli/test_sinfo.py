"""sinfo: grouping, folding, widths and the default/-N/-R/-l formats on API objects."""

from __future__ import annotations

import json

from cli.main import main
from cli.sinfo import LONG_NODE_FORMAT, format_sinfo


def cluster(objs):
    parts = [
        objs.partition("debug", default=True, max_time=None),
        objs.partition("long", default=False, max_time=2880),
        objs.partition("empty", default=False, state="DOWN", max_time=30),
    ]
    nodes = [
        objs.node("node01", partitions=["debug", "long"]),
        objs.node("node02"),
        objs.node("node10"),
        objs.node("node03", "alloc", "allocated", "ALLOCATED", cpus_alloc=4),
        objs.node(
            "node04",
            "drain",
            "drained",
            "IDLE",
            flags=["DRAIN"],
            reason="bad disk",
            reason_user="root",
            reason_time="2024-03-01T09:00:00Z",
        ),
        objs.node(
            "node05",
            "down*",
            "down*",
            "DOWN",
            flags=["NOT_RESPONDING"],
            reason="Not responding",
            reason_user="slurm",
        ),
    ]
    return parts, nodes


def test_default_format(objs):
    assert format_sinfo(*cluster(objs)) == [
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
        # Slurm's "-t" sort: decreasing state number, flags included (DOWN+NOT_RESPONDING first)
        "debug*       up   infinite      1  down* node05",
        "debug*       up   infinite      1  drain node04",
        "debug*       up   infinite      1  alloc node03",
        "debug*       up   infinite      3   idle node[01-02,10]",
        "long         up 2-00:00:00      1   idle node01",
        "empty      down      30:00      0    n/a ",
    ]


def test_long_partition_names_widen_the_column(objs):
    parts = [objs.partition("interactive", default=True)]
    lines = format_sinfo(parts, [objs.node("n1", partitions=["interactive"])], header=True)
    assert lines == [
        "PARTITION    AVAIL  TIMELIMIT  NODES  STATE NODELIST",
        "interactive*    up   infinite      1   idle n1",
    ]


def test_node_oriented(objs):
    lines = format_sinfo(*cluster(objs), "%#N %.6D %#P %6t", per_node=True)
    assert lines[:4] == [
        "NODELIST   NODES PARTITION STATE ",
        "node01         1 debug*    idle  ",
        "node01         1 long      idle  ",
        "node02         1 debug*    idle  ",
    ]
    assert lines[-1] == "node10         1 debug*    idle  "


def test_long_node_oriented(objs):
    parts, nodes = cluster(objs)
    lines = format_sinfo(parts, nodes[3:5], LONG_NODE_FORMAT, per_node=True)
    assert lines == [
        "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON              ",  # noqa: E501 - one exact Slurm line
        "node03         1 debug*      allocated    4    4:1:1   2000        0      1   (null) none                ",  # noqa: E501 - one exact Slurm line
        "node04         1 debug*        drained    4    4:1:1   2000        0      1   (null) bad disk            ",  # noqa: E501 - one exact Slurm line
    ]


def test_list_reasons(objs):
    lines = format_sinfo(*cluster(objs), "%20E %9u %19H %N", reasons=True)
    assert lines == [
        "REASON               USER      TIMESTAMP           NODELIST",
        "Not responding       slurm     Unknown             node05",
        "bad disk             root      2024-03-01T09:00:00 node04",
    ]


def test_cpu_and_node_summaries(objs):
    parts, nodes = cluster(objs)
    assert format_sinfo(parts[:1], nodes, "%P %C %F %c %m", header=False) == [
        "debug* 4/12/8/24 1/3/2/6 4 2000"
    ]


def test_sinfo_over_http(api, capsys, objs):
    parts, nodes = cluster(objs)
    api.routes[("GET", "/api/partitions/")] = (200, api.page(parts))
    api.routes[("GET", "/api/nodes/")] = (200, api.page(nodes))
    assert main(["fsched", "sinfo", "-h", "-p", "long"]) == 0
    assert capsys.readouterr().out == "long         up 2-00:00:00      1   idle node01\n"
    assert main(["fsched", "sinfo", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["sinfo"]
    listed = sorted(name for e in entries for name in e["nodes"]["nodes"])
    assert listed == sorted(n["name"] for n in nodes for _ in n["partitions"])  # once per partition
    assert main(["fsched", "sinfo", "-n", "node[01-02]", "-t", "idle"]) == 0
    assert api.requests[-1]["query"] == "name=node%5B01-02%5D&state=idle&limit=100000"


def test_a_bad_state_is_refused_before_any_request(api, capsys):
    assert main(["fsched", "sinfo", "-t", "idle,bogus"]) == 1
    err = capsys.readouterr().err
    first, second = err.splitlines()
    assert first == 'sinfo: error: Bad state string: "bogus"'
    assert second.startswith("sinfo: error: valid states: unknown,down,idle,")
    assert not api.requests


def test_dead_and_responding_keep_the_nodes_by_their_not_responding_flag(api, capsys, objs):
    parts, nodes = cluster(objs)
    api.routes[("GET", "/api/partitions/")] = (200, api.page(parts))
    api.routes[("GET", "/api/nodes/")] = (200, api.page(nodes))
    dead = {n["name"] for n in nodes if "NOT_RESPONDING" in n["flags"]}
    assert dead and dead != {n["name"] for n in nodes}
    assert main(["fsched", "sinfo", "-h", "-N", "-o", "%N", "--dead"]) == 0
    assert set(capsys.readouterr().out.split()) == dead
    assert main(["fsched", "sinfo", "-h", "-N", "-o", "%N", "-r"]) == 0
    assert set(capsys.readouterr().out.split()) == {n["name"] for n in nodes} - dead
    assert main(["fsched", "sinfo", "-h", "-N", "-o", "%N", "-d", "-r"]) == 0
    assert capsys.readouterr().out == ""


def test_partitions_are_kept_by_sinfo_itself(api, capsys, objs):
    """sinfo loads every partition and keeps -p's (src/sinfo/sinfo.c): a name no partition
    has prints the header alone and exits 0 (fsched asked the API, which refused it); a
    node-centric listing keeps only those partitions' nodes."""
    parts, nodes = cluster(objs)
    api.routes[("GET", "/api/partitions/")] = (200, api.page(parts))
    api.routes[("GET", "/api/nodes/")] = (200, api.page(nodes))
    assert main(["fsched", "sinfo", "-p", "nosuch"]) == 0
    assert capsys.readouterr().out == "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
    assert "partition" not in api.requests[-1]["query"]
    assert main(["fsched", "sinfo", "-h", "-N", "-p", "long", "-o", "%N"]) == 0
    assert capsys.readouterr().out == "node01\n"


def test_hostnames_are_the_nodes_hosts(objs):
    # %n is NodeHostName (scontrol show node's: the agent's host, else the node's name),
    # each host once; with %n in the format a line's nodes share their host, as sinfo's
    # hostnames_flag groups them.  %N and %o stay node names.
    parts = [objs.partition("debug", default=True)]
    nodes = [
        objs.node("n1", agent="hostA:1"),
        objs.node("n2", agent="hostA:1"),
        objs.node("n3", agent="hostB:7"),
        objs.node("n4", agent=""),
    ]
    assert format_sinfo(parts, nodes, "%P %N %n %o", header=False) == [
        "debug* n[1-2] hostA n[1-2]",
        "debug* n3 hostB n3",
        "debug* n4 n4 n4",
    ]
    assert format_sinfo(parts, nodes, "%P %N", header=False) == ["debug* n[1-4]"]
