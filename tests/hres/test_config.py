"""resources.yaml: every field read, every bad input refused with file, line and reason."""

from __future__ import annotations

import textwrap

import pytest

from cluster.core.slurmconf import ConfigError
from hres.core.config import HresProblem, Mode, PluginConf, load_resources, parse_resources

NODES = [f"node{i:02d}" for i in range(1, 33)]


def parse(text: str, **kw):
    return parse_resources(textwrap.dedent(text), **kw)


def problems(text: str, **kw) -> list[HresProblem]:
    with pytest.raises(ConfigError) as info:
        parse(text, **kw)
    return info.value.problems


def test_spec_file_reads_every_field(spec_config):
    flat, natural, power = spec_config.resources
    assert (flat.name, flat.mode, natural.mode, power.mode) == ("flat", Mode.MODE_2, Mode.MODE_1, Mode.MODE_3)
    assert [la.name for la in flat.layers] == ["top", "mid1", "mid2", "low1", "low2", "low3", "low4"]
    assert flat.layer("top").count == 24 and flat.layer("low4").nodes == frozenset(NODES[24:])
    assert power.topology == "blok1"
    assert power.variables == (("full_node", 1000), ("full_gpu_node", 2000))
    rack1 = power.layer("rack1")
    assert (rack1.parent, rack1.count, rack1.base, rack1.line) == ("row1", 40000, (("storage", 5000),), 57)
    # Parents inherit the union of their children's nodes.
    assert power.layer("row1").nodes == frozenset(NODES[:16])
    assert power.layer("datacenter").nodes == frozenset(NODES)
    assert power.base_usage() == {
        "rack1": 5000,
        "rack3": 0,
        "rack2": 0,
        "rack4": 0,
        "row1": 8000,
        "row2": 2000,
        "datacenter": 28000,
    }
    assert spec_config.modes() == {"flat": Mode.MODE_2, "natural": Mode.MODE_1, "power": Mode.MODE_3}
    assert spec_config.resource("nope") is None


def test_defaults_count_zero_infinite_and_disable_flags():
    conf = parse(
        """
        - resource: lic
          mode: mode_1
          disable_hres: true
          layers:
            - layer_name: a
            - layer_name: b
              count: -1
              disable_layer: true
        """
    )
    res = conf.resources[0]
    assert res.mode == Mode.MODE_1 and res.disabled
    assert (res.layers[0].count, res.layers[0].nodes, res.layers[1].count) == (0, frozenset(), None)
    assert res.layers[1].disabled and not res.layers[0].disabled


def test_empty_file_is_no_resources():
    assert parse("").resources == ()
    assert parse("---\n").resources == ()


@pytest.mark.parametrize("inside", [True, False])
def test_plugin_section_with_timers_beside_or_inside_config(inside):
    if inside:
        body = """
        - resource: qpu
          mode: MODE_1
          plugin:
            type: hres/lua
            config:
              - name: path
                value: /etc/slurm/hres_qpu.lua
              - name: maintenance_cycle
                value: 60
              - name: maintenance_timeout
                value: 10
          layers:
            - layer_name: qpu1
              nodes: ["node[01-16]"]
              count: 1
        """
    else:
        body = """
        - resource: qpu
          mode: MODE_1
          plugin:
            type: hres/lua
            config:
              - name: path
                value: /etc/slurm/hres_qpu.lua
            maintenance_cycle: 60
            maintenance_timeout: 10
          layers:
            - layer_name: qpu1
              nodes: ["node[01-16]"]
              count: 1
        """
    plugin = parse(body).resources[0].plugin
    assert isinstance(plugin, PluginConf)
    assert (plugin.type, plugin.option("path")) == ("hres/lua", "/etc/slurm/hres_qpu.lua")
    assert (plugin.maintenance_cycle, plugin.maintenance_timeout) == (60, 10)


def test_every_problem_is_collected_with_line_resource_and_layer():
    found = problems(
        """
        - resource: flat
          mode: MODE_2
          colour: red
          layers:
            - layer_name: top
              count: "24"
            - layer_name: top
              count: 3
            - layer_name: low
              nodes: ["node[01-40]"]
              count: -2
        """,
        cluster_nodes=NODES,
    )
    text = [str(p) for p in found]
    assert text == [
        "resources.yaml:4: resource flat: unknown key 'colour' in a resource (expected disable_hres, layers, "
        "mode, plugin, resource, topology, variables)",
        "resources.yaml:7: resource flat, layer top: count must be -1 (infinite) or a non-negative integer, "
        "not '24'",
        "resources.yaml:8: resource flat, layer top: layer_name given twice (first at line 6)",
        "resources.yaml:11: resource flat, layer low: nodes: node[33-40] not in the cluster",
        "resources.yaml:12: resource flat, layer low: count must be -1 (infinite) or a non-negative integer, "
        "not -2",
    ]
    assert found[2].resource == "flat" and found[2].layer == "top"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("- resource: x\n  layers: [{layer_name: a}]\n", "resources.yaml:1: resource x: missing 'mode'"),
        (
            "- resource: x\n  mode: MODE_4\n  layers: [{layer_name: a}]\n",
            "mode must be MODE_1, MODE_2 or MODE_3",
        ),
        ("- resource: x\n  mode: MODE_1\n", "resources.yaml:1: resource x: missing 'layers'"),
        ("- resource: x\n  mode: MODE_1\n  layers: []\n", "layers must be a non-empty list"),
        ("- mode: MODE_1\n  layers: [{layer_name: a}]\n", "missing 'resource'"),
        ("- resource: 'a b'\n  mode: MODE_1\n  layers: [{layer_name: a}]\n", "bad resource name 'a b'"),
        ("- resource: x\n  mode: MODE_1\n  layers: [{count: 3}]\n", "bad or missing layer_name None"),
        (
            "- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, nodes: 'node01'}]\n",
            "nodes must be a list",
        ),
        ("- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, nodes: ['node[01']}]\n", "bad hostlist"),
        ("- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, nodes: [3]}]\n", "3 is not a hostlist"),
        ("- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, disable_layer: 1}]\n", "true or false"),
        (
            "- resource: x\n  mode: MODE_1\n  disable_hres: yes please\n  layers: [{layer_name: a}]\n",
            "true or",
        ),
        (
            "- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, wat: 1}]\n",
            "unknown key 'wat' in a layer",
        ),
        ("- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, base: [{name: s}]}]\n", "value must be"),
        ("- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, base: {s: 1}}]\n", "base must be a list"),
        (
            "- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, parent_name: b}]\n",
            "parent_name b is not",
        ),
        ("- resource: x\n  mode: MODE_1\n  layers: [{layer_name: a, parent_name: a}]\n", "its own parent"),
        ("- resource: x\n  mode: MODE_1\n  topology: [1]\n  layers: [{layer_name: a}]\n", "topology must be"),
        (
            "- resource: x\n  mode: MODE_1\n  variables: [{name: v, value: x}]\n"
            "  layers: [{layer_name: a}]\n",
            "variables v: value must be a non-negative integer",
        ),
        (
            "- resource: x\n  mode: MODE_1\n  plugin: hres/lua\n  layers: [{layer_name: a}]\n",
            "plugin must be",
        ),
        (
            "- resource: x\n  mode: MODE_1\n  plugin: {config: []}\n  layers: [{layer_name: a}]\n",
            "missing 'type'",
        ),
        ("resource: x\n", "resources.yaml:1: the file must be a list of resources"),
        ("- 3\n", "a resource must be a mapping"),
        ("- resource: x\n  resource: y\n  mode: MODE_1\n  layers: [{layer_name: a}]\n", "given twice"),
    ],
)
def test_bad_fields(body, expected):
    text = "\n".join(str(p) for p in problems(body))
    assert expected in text


def test_duplicate_resource_and_base_names():
    found = problems(
        """
        - resource: x
          mode: MODE_1
          layers:
            - layer_name: a
              count: 10
              base: [{name: s, value: 1}, {name: s, value: 2}]
        - resource: x
          mode: MODE_1
          layers: [{layer_name: a}]
        """
    )
    assert [str(p) for p in found] == [
        "resources.yaml:7: resource x, layer a: base s given twice",
        "resources.yaml:8: resource x: defined twice (first at line 2)",
    ]


def test_name_clashing_with_a_cluster_license():
    found = problems(
        "- resource: fluent\n  mode: MODE_1\n  layers: [{layer_name: a}]\n", cluster_licenses={"fluent"}
    )
    assert "resources.yaml:1: resource fluent: the name is a cluster license" in str(found[0])


def test_count_below_base_usage_including_mode3_propagation():
    found = problems(
        """
        - resource: power
          mode: MODE_3
          layers:
            - layer_name: rack
              parent_name: root
              nodes: ["node01"]
              count: 100
              base: [{name: pdu, value: 80}]
            - layer_name: root
              count: 90
              base: [{name: ac, value: 20}]
        """
    )
    assert [str(p) for p in found] == [
        "resources.yaml:10: resource power, layer root: count 90 is below its BaseUsage 100"
    ]
    # Zero count with a base is below it too; infinite never is.
    found = problems(
        "- resource: x\n  mode: MODE_2\n  layers: [{layer_name: a, base: [{name: s, value: 1}]}]\n"
    )
    assert "count 0 is below its BaseUsage 1" in str(found[0])
    parse(
        "- resource: x\n  mode: MODE_2\n  layers: [{layer_name: a, count: -1, base: [{name: s, value: 1}]}]\n"
    )


def test_mode3_tree_rules():
    two_roots = problems(
        """
        - resource: p
          mode: MODE_3
          layers:
            - {layer_name: a, nodes: ["node01"], count: 1}
            - {layer_name: b, nodes: ["node02"], count: 1}
        """
    )
    assert "exactly one root layer, found a, b" in str(two_roots[0])
    cycle = problems(
        """
        - resource: p
          mode: MODE_3
          layers:
            - {layer_name: root, count: 1}
            - {layer_name: a, parent_name: b, nodes: ["node01"], count: 1}
            - {layer_name: b, parent_name: a, count: 1}
        """
    )
    assert "parent_name cycle: a -> b -> a" in "\n".join(map(str, cycle))
    uneven = problems(
        """
        - resource: p
          mode: MODE_3
          layers:
            - {layer_name: root, count: 10}
            - {layer_name: row, parent_name: root, count: 10}
            - {layer_name: rack1, parent_name: row, nodes: ["node01"], count: 10}
            - {layer_name: rack2, parent_name: row, nodes: ["node02"], count: 10}
            - {layer_name: odd, parent_name: root, nodes: ["node03"], count: 10}
        """
    )
    assert [str(p) for p in uneven] == [
        "resources.yaml:9: resource p, layer odd: Mode 3 needs a uniform-depth tree: "
        "this leaf is at depth 1, others at 2"
    ]
    nodes_on_parent = problems(
        """
        - resource: p
          mode: MODE_3
          layers:
            - {layer_name: root, nodes: ["node01"], count: 10}
            - {layer_name: leaf, parent_name: root, nodes: ["node02"], count: 10}
        """
    )
    assert "nodes may only be listed on leaf layers" in str(nodes_on_parent[0])
    shared = problems(
        """
        - resource: p
          mode: MODE_3
          layers:
            - {layer_name: root, count: 10}
            - {layer_name: l1, parent_name: root, nodes: ["node[01-02]"], count: 10}
            - {layer_name: l2, parent_name: root, nodes: ["node[02-03]"], count: 10}
        """
    )
    assert "node node02 is already in leaf layer l1" in str(shared[0])
    no_root = problems(
        """
        - resource: p
          mode: MODE_3
          layers:
            - {layer_name: a, parent_name: b}
            - {layer_name: b, parent_name: a}
        """
    )
    assert any("needs one root layer" in str(p) for p in no_root)


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "resources.yaml"
    path.write_text("- resource: x\n  mode: MODE_1\n  layers: [\n    {layer_name: a\n")
    with pytest.raises(ConfigError) as info:
        load_resources(path)
    (problem,) = info.value.problems
    assert str(problem).startswith("resources.yaml:5: bad YAML")


def test_unreadable_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_resources(tmp_path / "missing.yaml")
