"""Reconfigure bounds (issue 10, item 5): huge integers and huge hostlists are refused with
file:line before anything is expanded or stored, and no message quotes a file the caller
of a reconfigure may not be allowed to read."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet
from hypothesis import given
from hypothesis import strategies as st

from cluster.core.hostlists import HostlistError
from cluster.core.hostlists import count as hostlist_size
from cluster.core.slurmconf import ConfigError, load_slurm_conf, parse_nodeset
from cluster.models import ClusterConfig, Node
from cluster.services.configuration import config_load
from cluster.services.errors import ServiceError

HEAD = "ClusterName=test\nSlurmctldHost=ctl\n"
THIRTY_DIGITS = "9" * 30


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_slurm_conf(path)
    return [str(p) for p in info.value.problems]


def conf(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "slurm.conf"
    path.write_text(HEAD + body)
    return path


# --- integers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("NodeName=n1 CPUs=huge", "slurm.conf:3: CPUs=huge: not an integer"),
        (f"NodeName=n1 CPUs={THIRTY_DIGITS}", f"slurm.conf:3: CPUs={THIRTY_DIGITS}: must be at most 65535"),
        ("NodeName=n1 CPUs=65536", "slurm.conf:3: CPUs=65536: must be at most 65535"),
        (
            "NodeName=n1 RealMemory=2147483648",
            "slurm.conf:3: RealMemory=2147483648: must be at most 2147483647 MB",
        ),
        ("NodeName=n1 RealMemory=3000T", "slurm.conf:3: RealMemory=3000T: must be at most 2147483647 MB"),
        (f"NodeName=n1 RealMemory={THIRTY_DIGITS}", "slurm.conf:3: RealMemory="),
        (f"NodeName=n1 Weight={THIRTY_DIGITS}", "slurm.conf:3: Weight="),
        (
            "NodeName=n1 Sockets=256 CoresPerSocket=256 ThreadsPerCore=2",
            "slurm.conf:3: Sockets*CoresPerSocket*ThreadsPerCore=131072: must be at most 65535",
        ),
        (f"PartitionName=p MaxNodes={THIRTY_DIGITS}", "slurm.conf:3: MaxNodes="),
        (
            "PartitionName=p MaxTime=99999999999-00:00:00",
            "slurm.conf:3: MaxTime=99999999999-00:00:00: must be",
        ),
        (f"MaxJobCount={THIRTY_DIGITS}", f"slurm.conf:3: MaxJobCount={THIRTY_DIGITS}: must be at most"),
        (f"SlurmdTimeout=-{THIRTY_DIGITS}", "slurm.conf:3: SlurmdTimeout=-"),
        (f"Licenses=fluent:{THIRTY_DIGITS}", "slurm.conf:3: Licenses=fluent:"),
    ],
)
def test_huge_integers_are_refused_with_file_line_and_key(tmp_path: Path, line: str, message: str) -> None:
    found = problems(conf(tmp_path, line + "\n"))
    assert any(p.startswith(message) for p in found), found


def test_the_largest_values_the_columns_hold_are_accepted(tmp_path: Path) -> None:
    config = load_slurm_conf(
        conf(tmp_path, "NodeName=n1 CPUs=65535 RealMemory=2147483647 Weight=2147483647\n")
    )
    node = config.node("n1")
    assert node is not None and (node.cpus, node.real_memory, node.weight) == (65535, 2147483647, 2147483647)


def test_reconfigure_with_a_thirty_digit_cpus_is_a_400_and_changes_nothing(demo, api, conf_dir, settings):
    settings.CONF_DIR = conf_dir
    version = ClusterConfig.current().version
    with open(conf_dir / "slurm.conf", "a") as f:
        f.write(f"NodeName=huge1 CPUs={THIRTY_DIGITS}\n")
    response = api("admin").post("/api/reconfigure/")
    assert response.status_code == 400
    assert f"CPUs={THIRTY_DIGITS}: must be at most 65535" in response.json()["error"]
    assert ClusterConfig.current().version == version
    assert not Node.objects.filter(name="huge1").exists()


# --- hostlists --------------------------------------------------------------------------


def test_a_nodename_line_beyond_max_node_count_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    path = conf(tmp_path, "NodeName=node[1-99999999] CPUs=1\n")
    start = time.perf_counter()
    found = problems(path)
    elapsed = time.perf_counter() - start
    # Expanding it would take ClusterShell minutes and gigabytes.
    assert elapsed < 1.0, elapsed
    assert found == ["slurm.conf:3: NodeName=node[1-99999999]: 99999999 nodes, more than MaxNodeCount=65536"]


def test_max_node_count_bounds_every_nodename_line_together(tmp_path: Path) -> None:
    ok = load_slurm_conf(conf(tmp_path, "MaxNodeCount=100\nNodeName=a[1-60]\nNodeName=b[1-40]\n"))
    assert len(ok.nodes) == 100
    found = problems(conf(tmp_path, "MaxNodeCount=100\nNodeName=a[1-60]\nNodeName=b[1-41]\n"))
    assert found == [
        "slurm.conf:5: NodeName=b[1-41]: 41 nodes, more than MaxNodeCount=100 (60 defined before)"
    ]


def test_max_node_count_itself_is_bounded(tmp_path: Path) -> None:
    found = problems(conf(tmp_path, "MaxNodeCount=99999999\nNodeName=n[1-99999999]\n"))
    assert found[0] == "slurm.conf:3: MaxNodeCount=99999999: must be at most 262144"


@pytest.mark.parametrize(
    "line",
    [
        "NodeName=n1 NodeAddr=a[1-99999999]",
        "NodeName=n1\nPartitionName=p Nodes=n[1-99999999]",
        "NodeName=n1\nNodeSet=big Nodes=n[1-99999999]",
        "NodeName=n1\nPartitionName=p Nodes=n[1-99999999999999999999999999999]",
    ],
)
def test_other_hostlists_of_the_file_are_bounded_too(tmp_path: Path, line: str) -> None:
    start = time.perf_counter()
    found = problems(conf(tmp_path, line + "\n"))
    assert time.perf_counter() - start < 1.0
    # Too many names, or an index no node name has: refused either way, unexpanded.
    assert any("names, more than 262144" in p or "more than 18 digits" in p for p in found), found


def test_parse_nodeset_refuses_before_expanding() -> None:
    start = time.perf_counter()
    with pytest.raises(ValueError, match="bad hostlist: 2000000 names, more than 1000"):
        parse_nodeset("node[1-2000000]", limit=1000)
    assert time.perf_counter() - start < 0.1
    assert len(parse_nodeset("node[1-1000]", limit=1000)) == 1000


def test_hostlist_size_is_an_upper_bound_with_operators() -> None:
    assert hostlist_size("n[1-10]!n[2-3]") >= len(NodeSet("n[1-10]!n[2-3]", resolver=RESOLVER_NOGROUP))
    assert hostlist_size("r[1-2]n[1-4],x") == 9
    with pytest.raises(HostlistError):
        hostlist_size("n[1-" + "9" * 40 + "]")


_ranges = st.lists(
    st.tuples(st.integers(0, 300), st.integers(0, 40), st.integers(1, 4)), min_size=1, max_size=4
).map(lambda items: ",".join(f"{a}-{a + n}/{s}" if n else f"{a}" for a, n, s in items))


@given(st.lists(st.tuples(st.sampled_from(["n", "rack", "x-"]), _ranges), min_size=1, max_size=3))
def test_hostlist_size_counts_what_clustershell_expands(parts: list[tuple[str, str]]) -> None:
    expr = ",".join(f"{prefix}[{ranges}]" for prefix, ranges in parts)
    # Exact as written (a name given twice counts twice); a NodeSet folds repeats away.
    assert hostlist_size(expr) == sum(len(_expand(ranges)) for _, ranges in parts)
    assert hostlist_size(expr) >= len(NodeSet(expr, resolver=RESOLVER_NOGROUP))


def test_hostlist_size_is_exact_for_distinct_names() -> None:
    for expr in ("node1", "n[1-5,7,9-10]", "n[001-100/3]", "r[1-2]n[1-4]", "a,b[1-3],c[01-10]x[1-2]"):
        assert hostlist_size(expr) == len(NodeSet(expr, resolver=RESOLVER_NOGROUP)), expr


def _expand(ranges: str) -> list[int]:
    out: list[int] = []
    for item in ranges.split(","):
        first, _, rest = item.partition("-")
        last, _, step = rest.partition("/")
        out.extend(range(int(first), int(last or first) + 1, int(step or 1)))
    return out


def test_include_of_a_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    start = time.perf_counter()
    found = problems(conf(tmp_path, "Include /dev/zero\nNodeName=n1\n"))
    assert time.perf_counter() - start < 1.0
    assert found[0].startswith("slurm.conf:3: Include /dev/zero: not a regular file")


# --- what errors may quote -----------------------------------------------------------------

SECRET_LINES = (
    "root:$6$SECRETSALT$SECRETHASHSECRETHASH:19000:0:99999:7:::\n"
    "db_password=SECRET-hunter2\n"
    "NodeName=SECRETNODE CPUs=SECRETCPUS\n"
    'ClusterName="SECRET unterminated\n'
)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the configuration directory holding secret-looking lines."""
    (tmp_path / "etc").mkdir()
    secret = tmp_path / "etc" / "shadow"
    secret.write_text(SECRET_LINES)
    return secret


def test_an_included_file_outside_the_conf_dir_is_never_quoted(tmp_path: Path, outside: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    path = conf_dir / "slurm.conf"
    path.write_text(HEAD + f"NodeName=n1\nInclude {outside}\n")
    found = problems(path)
    assert not [p for p in found if "SECRET" in p or "hunter2" in p], found
    # Each line is still named by file and line, with the keyword when it is fsched's own.
    assert [p.split(": ", 1)[0] for p in found] == ["shadow:1", "shadow:2", "shadow:3", "shadow:4"]
    assert found[2].startswith("shadow:3: NodeName: refused or ignored; not quoted")


def test_a_symlink_inside_the_conf_dir_to_an_outside_file_is_not_quoted(
    tmp_path: Path, outside: Path
) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "nodes.conf").symlink_to(outside)
    path = conf_dir / "slurm.conf"
    path.write_text(HEAD + "Include nodes.conf\n")
    found = problems(path)
    assert found and not [p for p in found if "SECRET" in p or "hunter2" in p], found


def test_an_outside_key_value_file_cannot_publish_its_values(tmp_path: Path) -> None:
    """Unknown keys are kept in the options every user can read: from outside the
    configuration directory they are refused instead of accepted with a warning."""
    (tmp_path / "env").write_text("api_secret=SECRET-value\n")
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    path = conf_dir / "slurm.conf"
    path.write_text(HEAD + "NodeName=n1\nInclude ../env\n")
    found = problems(path)
    assert found == [
        "env:1: line: refused or ignored; not quoted, the file is outside the configuration directory"
    ]
    (conf_dir / "local.conf").write_text("site_option=visible\n")
    path.write_text(HEAD + "NodeName=n1\nInclude local.conf\n")
    assert load_slurm_conf(path).options["site_option"] == "visible"


def test_reconfigure_through_the_api_echoes_no_outside_file(demo, api, conf_dir, settings, outside):
    settings.CONF_DIR = conf_dir
    with open(conf_dir / "slurm.conf", "a") as f:
        f.write(f"Include {outside}\n")
    response = api("admin").post("/api/reconfigure/")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "shadow:1" in error and "SECRET" not in error and "hunter2" not in error


def test_files_inside_the_conf_dir_are_still_quoted(tmp_path: Path) -> None:
    (tmp_path / "nodes.conf").write_text("NodeName=n1 CPUs=abc\n")
    found = problems(conf(tmp_path, "Include nodes.conf\n"))
    assert found == ["nodes.conf:1: CPUs=abc: not an integer"]


def test_config_load_refuses_with_service_error_and_file_line(db, tmp_path: Path) -> None:
    path = conf(tmp_path, "NodeName=n[1-99999999]\n")
    with pytest.raises(ServiceError, match=r"slurm.conf:3: NodeName=n\[1-99999999\]: 99999999 nodes"):
        config_load(path=path)
    assert not Node.objects.exists()


# --- every load is recorded ------------------------------------------------------------------


def test_every_reconfigure_records_who_and_what_changed(demo, api, conf_dir, settings):
    settings.CONF_DIR = conf_dir
    with open(conf_dir / "slurm.conf", "a") as f:
        f.write("NodeName=extra[1-2] CPUs=2\nAccountingStoragePass=SECRET-pw\n")
    text = (conf_dir / "slurm.conf").read_text().replace("KillWait=5", "KillWait=7")
    (conf_dir / "slurm.conf").write_text(text)
    version = ClusterConfig.current().version
    assert api("admin").post("/api/reconfigure/").status_code == 200
    from cluster.models import Event

    record = Event.objects.filter(kind=Event.Kind.CONFIG, reason="reconfigure").order_by("-id").first()
    assert record is not None
    assert (record.user, record.old_state, record.new_state) == ("admin", f"v{version}", f"v{version + 1}")
    detail = record.detail
    assert str(conf_dir / "slurm.conf") in detail["files"]
    assert len(detail["digests"][str(conf_dir / "slurm.conf")]) == 64
    assert detail["options"]["KillWait"] == [5, 7]
    assert detail["options"]["AccountingStoragePass"] == ["(hidden)", "(hidden)"]
    assert "SECRET" not in str(detail)
    assert detail["nodes_added"] == "extra[1-2]" and detail["nodes_removed"] == ""
    # A load that changes nothing is recorded too, with nothing in its diff.
    assert api("admin").post("/api/reconfigure/").status_code == 200
    again = Event.objects.filter(kind=Event.Kind.CONFIG, reason="reconfigure").order_by("-id").first()
    assert again.pk != record.pk and again.detail["options"] == {} and again.detail["nodes_added"] == ""
