"""slurm.conf parsing (cluster.core.slurmconf): syntax, records, defaults, Includes, errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from ClusterShell.NodeSet import NodeSet
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.core.slurmconf import (
    ConfigError,
    ConfigProblem,
    ConfLine,
    SlurmConfig,
    expand_hostlist,
    load_slurm_conf,
    parse_licenses,
    parse_slurm_conf_text,
    read_conf_lines,
    tokenize,
)

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo" / "slurm.conf"

HEAD = "ClusterName=test\nSlurmctldHost=ctl\n"  # lines 1 and 2 of every text below


def parse(body: str, **kwargs: object) -> SlurmConfig:
    return parse_slurm_conf_text(HEAD + textwrap.dedent(body), **kwargs)  # type: ignore[arg-type]


def errors(body: str, **kwargs: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse(body, **kwargs)
    return [str(p) for p in info.value.problems]


def warnings(config: SlurmConfig) -> list[str]:
    return [str(w) for w in config.warnings]


# --- the tokenizer ---------------------------------------------------------------------


def test_tokenize_pairs_and_quotes() -> None:
    assert tokenize('PowerAction=x Location=slurmd Program="/usr/sbin/shutdown -h now"') == [
        ("PowerAction", "x"),
        ("Location", "slurmd"),
        ("Program", "/usr/sbin/shutdown -h now"),
    ]
    assert tokenize("  A=1\tB=  2 ") == [("A", "1"), ("B", "2")]
    assert tokenize('Reason=""') == [("Reason", "")]
    assert tokenize("SuspendExcNodes=nid[10-20]:4") == [("SuspendExcNodes", "nid[10-20]:4")]
    assert tokenize("") == []


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("NodeName=a junk", "junk: expected Key=Value"),
        ('Reason="open', 'Reason="open: unterminated quote'),
        ('Reason="a b"c', "text after closing quote"),
        ("=value", "=value: expected Key=Value"),
    ],
)
def test_tokenize_errors(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        tokenize(text)


def test_comments_continuations_and_case() -> None:
    config = parse(
        """\
        # a comment line
        slurmdtimeout=60   # trailing comment
        NodeName=n[1-2] \\
            CPUs=2 \\
            Feature=a,b
        partitionname=p nodes=n[1-2] default=yes   # keys in any case
        SlurmctldParameters="x # not a comment"
        SrunPortRange=a\\#b
        """
    )
    assert config.slurmd_timeout == 60
    assert config.options["SlurmdTimeout"] == "60"  # canonical spelling
    assert config.option("SLURMDTIMEOUT") == "60"
    assert [n.name for n in config.nodes] == ["n1", "n2"]
    assert config.node("n2").cpus == 2  # type: ignore[union-attr]
    assert config.node("n2").features == ("a", "b")  # type: ignore[union-attr]
    assert config.node("n1").source == "slurm.conf:5"  # type: ignore[union-attr]
    assert config.partition("p").default  # type: ignore[union-attr]
    assert config.options["SlurmctldParameters"] == "x # not a comment"
    assert config.options["SrunPortRange"] == "a#b"
    assert warnings(config) == []


def test_several_global_pairs_on_one_line() -> None:
    config = parse("SuspendTime=600 SuspendRate=10\n")
    assert config.options["SuspendTime"] == "600"
    assert config.options["SuspendRate"] == "10"


# --- nodes ------------------------------------------------------------------------------


def test_node_line_fields() -> None:
    config = parse(
        """\
        GresTypes=gpu
        NodeName=gpu[01-02] NodeAddr=10.0.0.[1-2] NodeHostname=h[1-2] Port=6818 CPUs=8 Sockets=2 \\
          CoresPerSocket=2 ThreadsPerCore=2 RealMemory=16G TmpDisk=100 Weight=10 Features=gpu,a100 \\
          Gres=gpu:a100:4 State=CLOUD SuspendTime=600 Reason="maint window" CpuSpecList=0
        NodeName=big State=future SuspendTime=INFINITE Boards=2 SocketsPerBoard=2 CoresPerSocket=4
        """
    )
    gpu1, gpu2, big = config.nodes
    assert gpu1.name == "gpu01" and gpu2.name == "gpu02"
    assert (gpu1.cpus, gpu1.sockets, gpu1.cores_per_socket, gpu1.threads_per_core) == (8, 2, 2, 2)
    assert gpu1.real_memory == 16384
    assert gpu1.tmp_disk == 100
    assert gpu1.weight == 10
    assert gpu1.features == ("gpu", "a100")
    assert gpu1.gres == "gpu:a100:4"
    assert gpu1.state == "CLOUD"
    assert gpu1.suspend_time == 600
    assert gpu1.port == 6818
    assert (gpu1.node_addr, gpu2.node_addr) == ("10.0.0.1", "10.0.0.2")
    assert (gpu1.node_hostname, gpu2.node_hostname) == ("h1", "h2")
    assert gpu1.extra == {"Reason": "maint window", "CpuSpecList": "0"}
    assert big.state == "FUTURE"
    assert big.suspend_time == -1
    assert (big.boards, big.sockets, big.cores_per_socket, big.cpus) == (2, 4, 4, 16)
    # Defaults: RealMemory 1 MB, Weight 1, State UNKNOWN, no SuspendTime, address = name.
    plain = parse("NodeName=x\n").node("x")
    assert plain is not None
    assert (plain.cpus, plain.real_memory, plain.weight, plain.state) == (1, 1, 1, "UNKNOWN")
    assert (plain.suspend_time, plain.node_addr, plain.node_hostname, plain.port) == (None, "x", "x", None)


def test_cpus_default_to_the_topology_product_and_cpus_alone_means_sockets() -> None:
    config = parse(
        """\
        NodeName=a Sockets=2 CoresPerSocket=4 ThreadsPerCore=2
        NodeName=b CPUs=6
        NodeName=c CPUs=8 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2
        NodeName=d CPUs=5 Sockets=2 CoresPerSocket=2
        """
    )
    a, b, c, d = config.nodes
    assert a.cpus == 16
    assert (b.cpus, b.sockets, b.cores_per_socket, b.threads_per_core) == (6, 6, 1, 1)
    assert c.cpus == 8  # Sockets*CoresPerSocket is accepted, as in Slurm
    assert d.cpus == 4  # matches nothing: reset to the product, with a warning
    assert warnings(config) == [
        "slurm.conf:6: CPUs=5 matches none of Sockets, Sockets*CoresPerSocket or "
        "Sockets*CoresPerSocket*ThreadsPerCore; using 4"
    ]


def test_node_default_lines_apply_to_following_lines_only() -> None:
    config = parse(
        """\
        NodeName=early
        NodeName=DEFAULT CPUs=4 RealMemory=2000 Weight=5
        NodeName=a
        NodeName=DEFAULT Weight=7
        NodeName=b RealMemory=100
        """
    )
    early, a, b = config.nodes
    assert (early.cpus, early.real_memory, early.weight) == (1, 1, 1)
    assert (a.cpus, a.real_memory, a.weight) == (4, 2000, 5)
    assert (b.cpus, b.real_memory, b.weight) == (4, 100, 7)  # DEFAULTs merge; the line wins


def test_nodes_keep_file_order() -> None:
    config = parse("NodeName=z1\nNodeName=a[3,1-2]\n")
    assert [n.name for n in config.nodes] == ["z1", "a1", "a2", "a3"]


# --- partitions ----------------------------------------------------------------------------


def test_partition_fields_and_extra() -> None:
    config = parse(
        """\
        NodeName=node[01-10]
        PartitionName=debug Nodes=node[01-04,10] Default=YES MaxTime=30 DefaultTime=10 MaxNodes=2 \\
            MinNodes=1 State=DRAIN PriorityTier=5 PriorityJobFactor=3 LoadSchedMem=1300 \\
            LoadStopMem=1200 SuspendTime=600 ResumeTimeout=300 PowerDownOnIdle=YES QOS=normal \\
            OverSubscribe=NO
        PartitionName=all Nodes=ALL MaxTime=UNLIMITED MaxNodes=UNLIMITED
        PartitionName=empty
        """
    )
    debug = config.partition("debug")
    assert debug is not None
    assert debug.nodes == ("node01", "node02", "node03", "node04", "node10")
    assert debug.nodes_expr == "node[01-04,10]"
    assert debug.default and config.default_partition() is debug
    assert (debug.max_time, debug.default_time, debug.max_nodes, debug.min_nodes) == (30, 10, 2, 1)
    assert (debug.state, debug.priority_tier, debug.priority_job_factor) == ("DRAIN", 5, 3)
    assert debug.extra == {
        "LoadSchedMem": "1300",
        "LoadStopMem": "1200",
        "SuspendTime": "600",
        "ResumeTimeout": "300",
        "PowerDownOnIdle": "YES",
        "QOS": "normal",
        "OverSubscribe": "NO",
    }
    assert debug.source == "slurm.conf:4"
    everything = config.partition("all")
    assert everything is not None
    assert everything.nodes_expr == "node[01-10]" and len(everything.nodes) == 10
    assert (everything.max_time, everything.max_nodes, everything.default) == (None, None, False)
    # Slurm's defaults: UP, MinNodes 0, PriorityTier/PriorityJobFactor 1, no limits.
    empty = config.partition("empty")
    assert empty is not None
    assert (empty.nodes, empty.nodes_expr, empty.state, empty.min_nodes) == ((), "", "UP", 0)
    assert (empty.priority_tier, empty.priority_job_factor, empty.max_time, empty.default_time) == (
        1,
        1,
        None,
        None,
    )
    assert warnings(config) == []


def test_partition_default_line_and_legacy_priority() -> None:
    config = parse(
        """\
        NodeName=n[1-4]
        PartitionName=DEFAULT MaxTime=60 State=DOWN Hidden=YES
        PartitionName=a Nodes=n[1-2]
        PartitionName=b Nodes=n[3-4] State=UP Priority=4
        """
    )
    a, b = config.partitions
    assert (a.max_time, a.state, a.extra) == (60, "DOWN", {"Hidden": "YES"})
    assert (b.max_time, b.state) == (60, "UP")
    assert (b.priority_tier, b.priority_job_factor) == (4, 4)  # Priority= sets both


def test_partitions_may_come_before_their_nodes() -> None:
    # As in the partitions.conf example of fsched's load thresholds.
    config = parse("PartitionName=p Nodes=compute1 Default=YES\nNodeName=compute1 CPUs=16\n")
    assert config.partition("p").nodes == ("compute1",)  # type: ignore[union-attr]


def test_nodeset_names_in_partition_nodes() -> None:
    config = parse(
        """\
        NodeName=n[1-4] Feature=cpu
        NodeName=g[1-2] Feature=gpu
        NodeSet=gpus Feature=gpu
        NodeSet=firsts Nodes=n[1-2]
        PartitionName=p Nodes=gpus,firsts,n4
        """
    )
    assert config.partition("p").nodes_expr == "g[1-2],n[1-2,4]"  # type: ignore[union-attr]
    assert [line.key for line in config.other_lines] == ["NodeSet", "NodeSet"]


def test_default_time_above_max_time_is_dropped_with_a_warning() -> None:
    config = parse("NodeName=n\nPartitionName=p Nodes=n MaxTime=10 DefaultTime=20\n")
    assert config.partition("p").default_time is None  # type: ignore[union-attr]
    assert warnings(config) == [
        "slurm.conf:4: PartitionName=p: DefaultTime exceeds MaxTime; DefaultTime ignored"
    ]


def test_several_default_partitions_the_last_wins() -> None:
    config = parse(
        """\
        NodeName=n
        PartitionName=a Nodes=n Default=YES
        PartitionName=b Nodes=n Default=YES
        """
    )
    assert config.default_partition().name == "b"  # type: ignore[union-attr]
    assert not config.partition("a").default  # type: ignore[union-attr]
    assert warnings(config) == [
        "slurm.conf:4: PartitionName=a: Default=YES overridden by PartitionName=b at slurm.conf:5"
    ]


# --- globals ----------------------------------------------------------------------------------


def test_global_defaults() -> None:
    config = parse("")
    assert (config.cluster_name, config.slurmctld_host) == ("test", "ctl")
    assert (config.slurmd_timeout, config.max_job_count, config.kill_wait, config.return_to_service) == (
        300,
        10000,
        30,
        0,
    )
    assert config.licenses == {}
    assert (config.scheduler_type, config.priority_type, config.resources_file) == (
        "sched/backfill",
        "priority/multifactor",
        None,
    )
    assert config.nodes == () and config.partitions == () and config.default_partition() is None
    assert config.files == ("slurm.conf",)


def test_global_values(tmp_path: Path) -> None:
    config = parse(
        """\
        SlurmdTimeout=20
        MaxJobCount=100000
        KillWait=5
        ReturnToService=2
        SchedulerType=sched/builtin
        PriorityType=priority/basic
        ResourcesFile=resources.yaml
        Licenses=fluent:30,ansys:10,matlab
        SlurmctldHost=backup(10.0.0.2)
        SuspendExcNodes=nid[10-20]:4
        """,
        include_dir=tmp_path,
    )
    assert (config.slurmd_timeout, config.max_job_count, config.kill_wait, config.return_to_service) == (
        20,
        100000,
        5,
        2,
    )
    assert (config.scheduler_type, config.priority_type) == ("sched/builtin", "priority/basic")
    assert config.resources_file == str(tmp_path / "resources.yaml")
    assert config.licenses == {"fluent": 30, "ansys": 10, "matlab": 1}
    assert config.slurmctld_hosts == ("ctl", "backup")
    assert config.options["SuspendExcNodes"] == "nid[10-20]:4"


def test_licenses() -> None:
    assert parse_licenses("fluent:30,ansys:10") == {"fluent": 30, "ansys": 10}
    assert parse_licenses("a, b*3 ,c:0") == {"a": 1, "b": 3, "c": 0}
    assert parse_licenses("") == {}
    with pytest.raises(ValueError, match="given twice"):
        parse_licenses("a:1,a:2")
    with pytest.raises(ValueError, match="bad license"):
        parse_licenses("a:x")


def test_cluster_name_is_lowercased_with_a_warning() -> None:
    config = parse_slurm_conf_text("ClusterName=Demo\nSlurmctldHost=x\n")
    assert config.cluster_name == "demo"
    assert warnings(config) == ["slurm.conf:1: ClusterName=Demo: converted to lowercase"]


def test_unknown_keys_are_warnings_and_kept() -> None:
    config = parse(
        """\
        FrobnicateLevel=3
        NodeName=n Colour=blue
        PartitionName=p Nodes=n Flavour=mint
        PowerAction=cloud_resume Location=slurmctld Program=/usr/sbin/slurm_resume
        DownNodes=n State=DOWN Reason=dead
        FrontendName=fe1
        Widget=w1 Size=3
        SlurmdTimeout=10
        SlurmdTimeout=12
        SchedulerType=sched/gang
        """
    )
    assert config.options["FrobnicateLevel"] == "3"
    assert config.node("n").extra == {"Colour": "blue"}  # type: ignore[union-attr]
    assert config.partition("p").extra == {"Flavour": "mint"}  # type: ignore[union-attr]
    assert [(line.key, line.source) for line in config.other_lines] == [
        ("PowerAction", "slurm.conf:6"),
        ("DownNodes", "slurm.conf:7"),
        ("FrontendName", "slurm.conf:8"),
        ("Widget", "slurm.conf:9"),
    ]
    assert config.other_lines[0].get("program") == "/usr/sbin/slurm_resume"
    assert config.slurmd_timeout == 12
    assert config.scheduler_type == "sched/backfill"
    assert warnings(config) == [
        "slurm.conf:3: FrobnicateLevel=3: unknown parameter",
        "slurm.conf:4: Colour=blue: unknown node parameter",
        "slurm.conf:5: Flavour=mint: unknown partition parameter",
        "slurm.conf:9: Widget=w1: unknown line type, ignored",
        "slurm.conf:11: SlurmdTimeout=12: also set at slurm.conf:10, latest value used",
        "slurm.conf:12: SchedulerType=sched/gang: not supported, using sched/backfill",
    ]


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("NodeName=node[01-\n", 'slurm.conf:3: NodeName=node[01-: bad hostlist: missing bracket: "node[01-"'),
        ("NodeName=node[5-1]\n", "slurm.conf:3: NodeName=node[5-1]: bad hostlist: bad range"),
        ("NodeName=@grp\n", "slurm.conf:3: NodeName=@grp: bad hostlist: invalid node name '@grp'"),
        ("NodeName=a,,b\n", "slurm.conf:3: NodeName=a,,b: bad hostlist: empty name"),
        ("NodeName=all\n", "slurm.conf:3: NodeName=all: ALL is reserved"),
        ("\nNodeName=n CPUs=abc\n", "slurm.conf:4: CPUs=abc: not an integer"),
        ("NodeName=n CPUs=0\n", "slurm.conf:3: CPUs=0: must be at least 1"),
        ("NodeName=n RealMemory=lots\n", "slurm.conf:3: RealMemory=lots: not a memory size"),
        ("NodeName=n Weight=-2\n", "slurm.conf:3: Weight=-2: must be at least 0"),
        ("NodeName=n Port=70000\n", "slurm.conf:3: Port=70000: must be at most 65535"),
        ("NodeName=n State=BROKEN\n", "slurm.conf:3: State=BROKEN: must be one of UNKNOWN, CLOUD, FUTURE"),
        ("NodeName=n SuspendTime=soon\n", "slurm.conf:3: SuspendTime=soon: not an integer"),
        (
            "NodeName=n Sockets=2 SocketsPerBoard=2\n",
            "slurm.conf:3: Sockets and SocketsPerBoard are mutually",
        ),
        (
            "NodeName=n[1-2] NodeAddr=a[1-3]\n",
            "slurm.conf:3: NodeAddr=a[1-3]: 3 names for 2 nodes in NodeName",
        ),
        ("NodeName=n junk\n", "slurm.conf:3: junk: expected Key=Value"),
        (
            "NodeName=n\nNodeName=m PartitionName=p\n",
            "slurm.conf:4: PartitionName=p: PartitionName must start",
        ),
        (
            "NodeName=node[01-04]\nNodeName=node[03-05]\n",
            "slurm.conf:4: NodeName=node[03-05]: duplicate node name node[03-04] "
            "(first defined at slurm.conf:3)",
        ),
        (
            "NodeName=n\nPartitionName=debug Nodes=node99\n",
            "slurm.conf:4: PartitionName=debug: Nodes=node99 names nodes not defined: node99",
        ),
        (
            "NodeName=n\nPartitionName=p Nodes=n\nPartitionName=p Nodes=n\n",
            "slurm.conf:5: PartitionName=p: duplicate partition (first defined at slurm.conf:4)",
        ),
        ("PartitionName=p Nodes=n[\n", "slurm.conf:3: PartitionName=p: Nodes=n[: bad hostlist"),
        ("PartitionName=p MaxTime=abc\n", "slurm.conf:3: MaxTime=abc: Invalid time limit specification"),
        (
            "PartitionName=p DefaultTime=-3\n",
            "slurm.conf:3: DefaultTime=-3: Invalid time limit specification",
        ),
        ("PartitionName=p Default=maybe\n", "slurm.conf:3: Default=maybe: must be YES or NO"),
        (
            "PartitionName=p State=OPEN\n",
            "slurm.conf:3: State=OPEN: must be one of UP, DOWN, DRAIN, INACTIVE",
        ),
        ("PartitionName=p MaxNodes=x\n", "slurm.conf:3: MaxNodes=x: not an integer"),
        ("PartitionName=p PriorityTier=70000\n", "slurm.conf:3: PriorityTier=70000: must be at most 65533"),
        (
            "PartitionName=p MinNodes=3 MaxNodes=2\n",
            "slurm.conf:3: PartitionName=p: MinNodes=3 exceeds MaxNodes=2",
        ),
        ("PartitionName=\n", "slurm.conf:3: PartitionName=: a partition needs a name"),
        ("SlurmdTimeout=soon\n", "slurm.conf:3: SlurmdTimeout=soon: not an integer"),
        ("MaxJobCount=0\n", "slurm.conf:3: MaxJobCount=0: must be at least 1"),
        ("ReturnToService=3\n", "slurm.conf:3: ReturnToService=3: must be at most 2"),
        ("Licenses=a:1,a:2\n", "slurm.conf:3: Licenses=a:1,a:2: license a given twice"),
        ('Program="/x y\n', 'slurm.conf:3: Program="/x y: unterminated quote'),
    ],
)
def test_errors_name_file_line_and_reason(body: str, message: str) -> None:
    assert any(e.startswith(message) for e in errors(body)), errors(body)


def test_missing_cluster_name_and_controller() -> None:
    with pytest.raises(ConfigError) as info:
        parse_slurm_conf_text("NodeName=n\n")
    assert [str(p) for p in info.value.problems] == [
        "slurm.conf: ClusterName needs to be specified",
        "slurm.conf: SlurmctldHost needs to be specified",
    ]


def test_all_errors_are_collected() -> None:
    found = errors(
        """\
        NodeName=a CPUs=x RealMemory=y
        NodeName=b[
        PartitionName=p Nodes=zz MaxTime=never
        KillWait=-1
        """
    )
    assert found == [
        "slurm.conf:3: CPUs=x: not an integer",
        "slurm.conf:3: RealMemory=y: not a memory size (MB, or with a K/M/G/T suffix)",
        'slurm.conf:4: NodeName=b[: bad hostlist: missing bracket: "b["',
        "slurm.conf:5: MaxTime=never: Invalid time limit specification",
        "slurm.conf:5: PartitionName=p: Nodes=zz names nodes not defined: zz",
        "slurm.conf:6: KillWait=-1: must be at least 0",
    ]


def test_config_error_str_and_problem_paths() -> None:
    problem = ConfigProblem("/etc/fsched/partitions.conf", 3, "boom")
    assert str(problem) == "partitions.conf:3: boom"
    assert str(ConfigError([problem, ConfigProblem("/x/slurm.conf", 0, "bad")])) == (
        "partitions.conf:3: boom\nslurm.conf: bad"
    )


# --- Include -------------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_include_relative_to_the_including_file(tmp_path: Path) -> None:
    main = write(tmp_path / "slurm.conf", HEAD + "Include nodes.conf\ninclude sub/parts.conf\n")
    write(tmp_path / "nodes.conf", "NodeName=n[1-2]\n")
    write(tmp_path / "sub" / "parts.conf", "Include more.conf\n")
    write(tmp_path / "sub" / "more.conf", "# partitions\nPartitionName=p Nodes=n1 Bogus=1\n")
    config = load_slurm_conf(main)
    assert config.partition("p").source == "more.conf:2"  # type: ignore[union-attr]
    assert config.files == tuple(
        str(p)
        for p in (main, tmp_path / "nodes.conf", tmp_path / "sub/parts.conf", tmp_path / "sub/more.conf")
    )
    assert config.warnings == (
        ConfigProblem(str(tmp_path / "sub" / "more.conf"), 2, "Bogus=1: unknown partition parameter"),
    )
    assert config.conf_dir == str(tmp_path)


def test_include_glob_and_absolute_and_quoted(tmp_path: Path) -> None:
    main = write(
        tmp_path / "slurm.conf",
        HEAD + f'Include conf.d/*.conf\nInclude "{tmp_path / "abs.conf"}"\n',
    )
    write(tmp_path / "conf.d" / "20-b.conf", "NodeName=b\n")
    write(tmp_path / "conf.d" / "10-a.conf", "NodeName=a\n")
    write(tmp_path / "abs.conf", "NodeName=c\n")
    config = load_slurm_conf(main)
    assert [n.name for n in config.nodes] == ["a", "b", "c"]  # glob matches in sorted order


def test_include_errors(tmp_path: Path) -> None:
    main = write(
        tmp_path / "slurm.conf",
        HEAD + "Include missing.conf\nInclude nothing*.conf\nInclude loop.conf\nNodeName=n CPUs=q\n",
    )
    write(tmp_path / "loop.conf", "NodeName=x\nInclude slurm.conf\n")
    with pytest.raises(ConfigError) as info:
        load_slurm_conf(main)
    assert [str(p) for p in info.value.problems] == [
        "slurm.conf:3: Include missing.conf: no such file",
        "slurm.conf:4: Include nothing*.conf: no file matches",
        "slurm.conf:6: CPUs=q: not an integer",
        "loop.conf:2: Include slurm.conf: include cycle (slurm.conf -> loop.conf -> slurm.conf)",
    ]


def test_include_from_text_uses_include_dir(tmp_path: Path) -> None:
    write(tmp_path / "partitions.conf", "PartitionName=p Nodes=n\n")
    config = parse("NodeName=n\nInclude partitions.conf\n", include_dir=tmp_path)
    assert config.partition("p").source == "partitions.conf:1"  # type: ignore[union-attr]


def test_unreadable_main_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"slurm.conf: cannot read"):
        load_slurm_conf(tmp_path / "slurm.conf")


def test_read_conf_lines_for_other_modules(tmp_path: Path) -> None:
    main = write(
        tmp_path / "slurm.conf",
        """\
        PowerAction=node_suspend Location=slurmd Program="/usr/sbin/shutdown -h now"
        Include power.conf
        """,
    )
    write(tmp_path / "power.conf", "\n\nSuspendExcNodes=nid[10-20]:4  # keep four up\n")
    lines = list(read_conf_lines(main))
    assert lines == [
        ConfLine(
            str(main),
            1,
            (
                ("PowerAction", "node_suspend"),
                ("Location", "slurmd"),
                ("Program", "/usr/sbin/shutdown -h now"),
            ),
        ),
        ConfLine(str(tmp_path / "power.conf"), 3, (("SuspendExcNodes", "nid[10-20]:4"),)),
    ]
    assert lines[1].source == "power.conf:3"
    assert lines[0].problem("bad Location") == ConfigProblem(str(main), 1, "bad Location")


def test_read_conf_lines_reports_problems(tmp_path: Path) -> None:
    main = write(tmp_path / "slurm.conf", "A=1\nInclude gone.conf\nB=2\n")
    problems: list[ConfigProblem] = []
    assert [line.key for line in read_conf_lines(main, problems=problems)] == ["A", "B"]
    assert [str(p) for p in problems] == ["slurm.conf:2: Include gone.conf: no such file"]
    with pytest.raises(ConfigError, match=r"gone\.conf: no such file"):
        list(read_conf_lines(main))


def test_config_keeps_every_line() -> None:
    config = parse("NodeName=n\n")
    assert [line.key for line in config.lines] == ["ClusterName", "SlurmctldHost", "NodeName"]


# --- hostlists (hypothesis) ------------------------------------------------------------------------

node_indices = st.sets(st.integers(min_value=0, max_value=300), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(node_indices, node_indices)
def test_hostlists_round_trip_through_the_config(first: set[int], second: set[int]) -> None:
    names = sorted(f"node{i:03d}" for i in first)
    folded = str(NodeSet.fromlist(names))
    part_names = sorted(f"node{i:03d}" for i in second)
    body = f"NodeName={folded}\nPartitionName=p Nodes={NodeSet.fromlist(part_names)}\n"
    undefined = set(part_names) - set(names)
    if undefined:
        assert any("names nodes not defined" in e for e in errors(body))
        return
    config = parse(body)
    assert [n.name for n in config.nodes] == names
    partition = config.partition("p")
    assert partition is not None
    assert list(partition.nodes) == part_names
    assert partition.nodes_expr == str(NodeSet.fromlist(part_names))
    assert expand_hostlist(partition.nodes_expr) == part_names


# --- the demo configuration ----------------------------------------------------------------------


def test_demo_config_loads_without_warnings() -> None:
    config = load_slurm_conf(DEMO)
    assert config.warnings == ()
    assert config.cluster_name == "demo"
    assert config.slurmctld_host == "localhost"
    cloud = [f"cloud{i:02d}" for i in range(1, 5)]  # power saving's CLOUD nodes
    assert [n.name for n in config.nodes] == [f"node{i:02d}" for i in range(1, 33)] + cloud
    assert all(n.state == ("CLOUD" if n.name in cloud else "UNKNOWN") for n in config.nodes)
    assert {p.name for p in config.partitions} == {"debug", "batch", "long", "cloud"}
    debug = config.default_partition()
    assert debug is not None and debug.name == "debug"
    assert (debug.nodes_expr, debug.max_time, debug.priority_tier) == ("node[01-08]", 30, 2)
    assert config.partition("long").nodes_expr == "node[17-32]"  # type: ignore[union-attr]
    assert (config.slurmd_timeout, config.return_to_service, config.kill_wait, config.max_job_count) == (
        20,
        1,
        5,
        100000,
    )
    assert config.licenses
    assert len({n.weight for n in config.nodes}) > 1
    assert [Path(f).name for f in config.files] == ["slurm.conf", "partitions.conf", "gres.conf"]
