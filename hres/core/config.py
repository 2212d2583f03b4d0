"""resources.yaml: read and validate the hierarchical resources (Slurm's hres.html), pure.

:func:`parse_resources` (text) and :func:`load_resources` (a path) turn the file into a
frozen :class:`HresConfig` or raise one :class:`cluster.core.slurmconf.ConfigError` listing
every problem found, each an :class:`HresProblem` naming ``resources.yaml:LINE``, the
resource, the layer and the reason.  Nothing is half-applied: the caller keeps its running
configuration when this raises.

What is checked (Slurm's hres.html, "Planning Modes", "Limitations", "Plugins"):

* keys and types of every field; unknown keys are errors (a typo must not pass silently);
* ``mode`` is ``MODE_1``, ``MODE_2`` or ``MODE_3``; ``count`` is ``-1`` (infinite) or a
  non-negative integer, 0 when omitted;
* unique resource names, unique ``layer_name`` per resource, no clash with the cluster's
  ``Licenses=``;
* ``nodes`` are hostlists of nodes the cluster has (when the node names are passed in);
* a layer's count is not below its ``BaseUsage`` (the sum of its ``base`` values, plus in
  Mode 3 its children's BaseUsage);
* Mode 3 layers form a rooted tree of uniform depth: one root, every other layer names an
  existing ``parent_name``, no cycles, every leaf at the same depth, ``nodes`` only on
  leaves and a node in at most one leaf.  Parents get the union of their children's nodes.

The ``plugin`` section is read (``type``, the ``config`` name/value list, and
``maintenance_cycle``/``maintenance_timeout`` beside or inside ``config``): ``type`` must
be ``hres/lua``, the one plugin there is, and ``config`` must give the script's absolute
``path`` (the same path on the controller and the nodes).  Loading the script is
``hres.lua_plugins``'s.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

from cluster.core.slurmconf import ConfigError, ConfigProblem, parse_nodeset
from slurmwords.licenses import Mode

DEFAULT_FILE = "resources.yaml"

# Names appear inside ``natural(low1):30`` and ``power(rack1*1000,...):1000``, so the
# characters those formats use as separators cannot be part of them.
NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class HresProblem(ConfigProblem):
    """A :class:`ConfigProblem` that also names the resource and layer it is about."""

    resource: str = ""
    layer: str = ""


@dataclass(frozen=True)
class LayerConf:
    name: str
    parent: str | None = None
    # The layer's nodes: as listed, or in Mode 3 for a parent the union of its children's.
    nodes: frozenset[str] = frozenset()
    count: int | None = 0  # None = infinite (count: -1)
    base: tuple[tuple[str, int], ...] = ()
    disabled: bool = False  # disable_layer
    line: int = 0

    @property
    def base_sum(self) -> int:
        return sum(v for _, v in self.base)


@dataclass(frozen=True)
class PluginConf:
    """The ``plugin`` section of a resource, for the hres/lua code."""

    type: str
    config: tuple[tuple[str, str], ...] = ()
    maintenance_cycle: int | None = None  # seconds
    maintenance_timeout: int | None = None
    line: int = 0
    path_line: int = 0  # the line of the ``path`` entry, for the script's load errors

    @property
    def path(self) -> str:
        return self.option("path") or ""

    def option(self, name: str) -> str | None:
        return next((v for k, v in self.config if k == name), None)


@dataclass(frozen=True)
class ResourceConf:
    name: str
    mode: Mode
    layers: tuple[LayerConf, ...]
    topology: str | None = None
    variables: tuple[tuple[str, int], ...] = ()
    disabled: bool = False  # disable_hres
    plugin: PluginConf | None = None
    line: int = 0

    def layer(self, name: str) -> LayerConf | None:
        return next((layer for layer in self.layers if layer.name == name), None)

    def base_usage(self) -> dict[str, int]:
        return base_usage(self.mode, self.layers)


@dataclass(frozen=True)
class HresConfig:
    resources: tuple[ResourceConf, ...] = ()
    file: str = DEFAULT_FILE
    _by_name: dict[str, ResourceConf] = field(default_factory=dict, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {r.name: r for r in self.resources})

    def resource(self, name: str) -> ResourceConf | None:
        return self._by_name.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.resources)

    def modes(self) -> dict[str, Mode]:
        return {r.name: r.mode for r in self.resources}


def base_usage(mode: Mode, layers: Iterable[LayerConf]) -> dict[str, int]:
    """BaseUsage per layer: its base values, plus in Mode 3 its children's BaseUsage.

    Parents that do not resolve (bad trees are reported elsewhere) propagate nothing.
    """
    layers = list(layers)
    usage = {layer.name: layer.base_sum for layer in layers}
    if mode != Mode.MODE_3:
        return usage
    parent = {layer.name: layer.parent for layer in layers}
    for layer in layers:
        seen = {layer.name}
        up = parent.get(layer.name)
        while up is not None and up in usage and up not in seen:
            usage[up] += layer.base_sum
            seen.add(up)
            up = parent.get(up)
    return usage


# --------------------------------------------------------------------------- YAML with lines


class _Map(dict):
    """A YAML mapping that remembers its line and each key's line."""

    line: int = 0
    key_lines: dict[Any, int]
    duplicates: list[tuple[Any, int]]


class _Seq(list):
    line: int = 0
    item_lines: list[int]


class _Loader(yaml.SafeLoader):
    pass


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser with the same constructors: ten times faster on a 10,000-node
    file (0.19 s a parse), and the same values and lines.  A file it refuses is parsed
    again by :class:`_Loader`, whose messages name what they found."""


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> _Map:
    loader.flatten_mapping(node)
    out = _Map()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    out.duplicates = []
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "unhashable key", key_node.start_mark
            ) from None
        if key in out:
            out.duplicates.append((key, line))
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = line
    return out


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> _Seq:
    out = _Seq(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


for _loader in (_Loader, _FastLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_seq)


# --------------------------------------------------------------------------- validation

_RESOURCE_KEYS = frozenset({"resource", "mode", "topology", "variables", "layers", "plugin", "disable_hres"})
_LAYER_KEYS = frozenset({"layer_name", "parent_name", "nodes", "count", "base", "disable_layer"})
_PAIR_KEYS = frozenset({"name", "value"})
_PLUGIN_KEYS = frozenset({"type", "config", "maintenance_cycle", "maintenance_timeout"})
_TIMER_KEYS = ("maintenance_cycle", "maintenance_timeout")
PLUGIN_TYPES = ("hres/lua",)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Checker:
    def __init__(self, file: str, cluster_nodes: Collection[str] | None, licenses: Collection[str]) -> None:
        self.file = file
        self.cluster_nodes = None if cluster_nodes is None else frozenset(cluster_nodes)
        self.licenses = frozenset(licenses)
        self.problems: list[HresProblem] = []

    def add(self, line: int, message: str, resource: str = "", layer: str = "") -> None:
        where = ""
        if resource:
            where = f"resource {resource}"
            if layer:
                where += f", layer {layer}"
            where += ": "
        self.problems.append(HresProblem(self.file, line, where + message, resource, layer))

    def _dups(self, m: _Map, resource: str = "", layer: str = "") -> None:
        for key, line in m.duplicates:
            self.add(line, f"{key!r} given twice", resource, layer)

    def _unknown(
        self, m: _Map, allowed: frozenset[str], what: str, resource: str = "", layer: str = ""
    ) -> None:
        for key in m:
            if key not in allowed:
                self.add(
                    m.key_lines[key],
                    f"unknown key {key!r} in {what} (expected {', '.join(sorted(allowed))})",
                    resource,
                    layer,
                )

    # -- the file

    def document(self, data: object) -> tuple[ResourceConf, ...]:
        if data is None:
            return ()
        if not isinstance(data, _Seq):
            line = getattr(data, "line", 1)
            self.add(line, "the file must be a list of resources (- resource: NAME ...)")
            return ()
        out: list[ResourceConf] = []
        seen: dict[str, int] = {}
        for item, line in zip(data, data.item_lines, strict=True):
            res = self.resource(item, line)
            if res is None:
                continue
            if res.name in seen:
                self.add(line, f"defined twice (first at line {seen[res.name]})", res.name)
                continue
            seen[res.name] = line
            out.append(res)
        return tuple(out)

    def resource(self, item: object, line: int) -> ResourceConf | None:
        if not isinstance(item, _Map):
            self.add(line, f"a resource must be a mapping, not {type(item).__name__}")
            return None
        raw_name = item.get("resource")
        name = raw_name if isinstance(raw_name, str) and NAME_RE.match(raw_name) else ""
        self._dups(item, name)
        self._unknown(item, _RESOURCE_KEYS, "a resource", name)
        if "resource" not in item:
            self.add(item.line, "missing 'resource' (the resource name)")
            return None
        if not name:
            self.add(item.key_lines["resource"], f"bad resource name {raw_name!r} (letters, digits, _ . -)")
            return None
        if name in self.licenses:
            self.add(
                item.key_lines["resource"],
                "the name is a cluster license (Licenses= in slurm.conf); HRES names must differ",
                name,
            )
        ok = True
        mode = Mode.MODE_1
        if "mode" not in item:
            self.add(item.line, "missing 'mode' (MODE_1, MODE_2 or MODE_3)", name)
            ok = False
        else:
            try:
                mode = Mode.parse(item["mode"])
            except ValueError as exc:
                self.add(item.key_lines["mode"], str(exc), name)
                ok = False
        topology = item.get("topology")
        if topology is not None and not isinstance(topology, str):
            self.add(item.key_lines["topology"], "topology must be a string", name)
            topology = None
        variables = self._pairs(item, "variables", name, "")
        disabled = self._bool(item, "disable_hres", name, "")
        plugin = self._plugin(item, name)
        layers = self._layers(item, name, mode if ok else None)
        if not ok or layers is None:
            return None
        return ResourceConf(name, mode, layers, topology, variables, disabled, plugin, item.line)

    def _bool(self, m: _Map, key: str, resource: str, layer: str) -> bool:
        value = m.get(key, False)
        if not isinstance(value, bool):
            self.add(m.key_lines[key], f"{key} must be true or false, not {value!r}", resource, layer)
            return False
        return value

    def _pairs(self, m: _Map, key: str, resource: str, layer: str) -> tuple[tuple[str, int], ...]:
        """``- name: X`` / ``value: N`` lists (base, variables): names unique, values >= 0."""
        raw = m.get(key)
        if raw is None:
            return ()
        if not isinstance(raw, _Seq):
            self.add(m.key_lines[key], f"{key} must be a list of name/value pairs", resource, layer)
            return ()
        out: list[tuple[str, int]] = []
        for entry, line in zip(raw, raw.item_lines, strict=True):
            if not isinstance(entry, _Map):
                self.add(line, f"{key}: each entry needs 'name' and 'value'", resource, layer)
                continue
            self._dups(entry, resource, layer)
            self._unknown(entry, _PAIR_KEYS, f"a {key} entry", resource, layer)
            name, value = entry.get("name"), entry.get("value")
            if not isinstance(name, str) or not NAME_RE.match(name):
                self.add(line, f"{key}: bad or missing name {name!r}", resource, layer)
                continue
            if not _is_int(value) or value < 0:
                self.add(
                    line,
                    f"{key} {name}: value must be a non-negative integer, not {value!r}",
                    resource,
                    layer,
                )
                continue
            if any(n == name for n, _ in out):
                self.add(line, f"{key} {name} given twice", resource, layer)
                continue
            out.append((name, value))
        return tuple(out)

    def _plugin(self, m: _Map, resource: str) -> PluginConf | None:
        raw = m.get("plugin")
        if raw is None:
            return None
        line = m.key_lines["plugin"]
        if not isinstance(raw, _Map):
            self.add(line, "plugin must be a mapping with a 'type'", resource)
            return None
        self._dups(raw, resource)
        self._unknown(raw, _PLUGIN_KEYS, "plugin", resource)
        kind = raw.get("type")
        if not isinstance(kind, str) or not kind:
            self.add(raw.line, "plugin: missing 'type' (hres/lua)", resource)
            return None
        if kind not in PLUGIN_TYPES:
            self.add(raw.key_lines["type"], f"plugin type {kind!r} is unknown (only hres/lua)", resource)
            return None
        timers: dict[str, int | None] = dict.fromkeys(_TIMER_KEYS)
        pairs: list[tuple[str, str]] = []
        lines: dict[str, int] = {}
        cfg = raw.get("config")
        # The example of Slurm's hres.html lost its indentation: the timers may sit beside
        # ``config`` or inside it (as mapping keys or as name/value entries); accept all three.
        if isinstance(cfg, _Map):
            for key, value in cfg.items():
                if key in _TIMER_KEYS:
                    timers[key] = self._timer(cfg.key_lines[key], key, value, resource)
                else:
                    pairs.append((str(key), str(value)))
                    lines[str(key)] = cfg.key_lines[key]
        elif isinstance(cfg, _Seq):
            for entry, eline in zip(cfg, cfg.item_lines, strict=True):
                if not isinstance(entry, _Map):
                    self.add(eline, "plugin config: each entry needs 'name' and 'value'", resource)
                    continue
                self._unknown(entry, _PAIR_KEYS, "a plugin config entry", resource)
                name, value = entry.get("name"), entry.get("value")
                if not isinstance(name, str) or not name or value is None or isinstance(value, _Map | _Seq):
                    self.add(eline, f"plugin config: bad entry {dict(entry)!r}", resource)
                elif name in _TIMER_KEYS:
                    timers[name] = self._timer(eline, name, value, resource)
                elif name in lines:
                    self.add(eline, f"plugin config: {name} given twice", resource)
                else:
                    pairs.append((name, str(value)))
                    lines[name] = eline
        elif cfg is not None:
            self.add(raw.key_lines["config"], "plugin config must be a list of name/value pairs", resource)
        for key in _TIMER_KEYS:
            if key in raw:
                timers[key] = self._timer(raw.key_lines[key], key, raw[key], resource)
        path = next((v for k, v in pairs if k == "path"), None)
        if path is None:
            self.add(raw.line, "plugin config: missing 'path' (the hres/lua script)", resource)
            return None
        if not path.startswith("/"):
            self.add(lines["path"], f"plugin path {path!r} must be absolute", resource)
            return None
        return PluginConf(
            kind,
            tuple(pairs),
            timers["maintenance_cycle"],
            timers["maintenance_timeout"],
            raw.line,
            lines["path"],
        )

    def _timer(self, line: int, key: str, value: object, resource: str) -> int | None:
        if not _is_int(value) or value < 0:
            self.add(line, f"plugin {key} must be a non-negative number of seconds, not {value!r}", resource)
            return None
        return value

    # -- layers

    def _layers(self, m: _Map, resource: str, mode: Mode | None) -> tuple[LayerConf, ...] | None:
        raw = m.get("layers")
        if raw is None:
            self.add(m.line, "missing 'layers' (at least one layer)", resource)
            return None
        if not isinstance(raw, _Seq) or not raw:
            self.add(m.key_lines["layers"], "layers must be a non-empty list of layers", resource)
            return None
        layers: list[LayerConf] = []
        listed: dict[str, bool] = {}  # layer -> whether it listed nodes itself
        seen: dict[str, int] = {}
        for entry, line in zip(raw, raw.item_lines, strict=True):
            layer = self._layer(entry, line, resource)
            if layer is None:
                continue
            if layer.name in seen:
                self.add(
                    line, f"layer_name given twice (first at line {seen[layer.name]})", resource, layer.name
                )
                continue
            seen[layer.name] = line
            layers.append(layer)
            listed[layer.name] = "nodes" in entry
        if mode is None:
            return tuple(layers)
        names = {layer.name for layer in layers}
        for layer in layers:
            if layer.parent is not None and layer.parent not in names:
                self.add(
                    layer.line,
                    f"parent_name {layer.parent} is not a layer of this resource",
                    resource,
                    layer.name,
                )
        if mode == Mode.MODE_3:
            layers = self._tree(layers, listed, resource)
        usage = base_usage(mode, layers)
        for layer in layers:
            if layer.count is not None and layer.count < usage[layer.name]:
                self.add(
                    layer.line,
                    f"count {layer.count} is below its BaseUsage {usage[layer.name]}",
                    resource,
                    layer.name,
                )
        return tuple(layers)

    def _layer(self, entry: object, line: int, resource: str) -> LayerConf | None:
        if not isinstance(entry, _Map):
            self.add(line, "a layer must be a mapping with a layer_name", resource)
            return None
        raw_name = entry.get("layer_name")
        name = raw_name if isinstance(raw_name, str) and NAME_RE.match(raw_name) else ""
        self._dups(entry, resource, name)
        self._unknown(entry, _LAYER_KEYS, "a layer", resource, name)
        if not name:
            self.add(line, f"bad or missing layer_name {raw_name!r} (letters, digits, _ . -)", resource)
            return None
        parent = entry.get("parent_name")
        if parent is not None and (not isinstance(parent, str) or not NAME_RE.match(parent)):
            self.add(entry.key_lines["parent_name"], f"bad parent_name {parent!r}", resource, name)
            parent = None
        if parent == name:
            self.add(entry.key_lines["parent_name"], "a layer cannot be its own parent", resource, name)
            parent = None
        count: int | None = 0
        if "count" in entry:
            value = entry["count"]
            if not _is_int(value) or value < -1:
                self.add(
                    entry.key_lines["count"],
                    f"count must be -1 (infinite) or a non-negative integer, not {value!r}",
                    resource,
                    name,
                )
            else:
                count = None if value == -1 else value
        nodes = self._nodes(entry, resource, name)
        base = self._pairs(entry, "base", resource, name)
        disabled = self._bool(entry, "disable_layer", resource, name)
        return LayerConf(name, parent, nodes, count, base, disabled, line)

    def _nodes(self, entry: _Map, resource: str, layer: str) -> frozenset[str]:
        raw = entry.get("nodes")
        if raw is None:
            return frozenset()
        line = entry.key_lines["nodes"]
        if not isinstance(raw, _Seq):
            self.add(line, 'nodes must be a list of hostlists (- "node[01-16]")', resource, layer)
            return frozenset()
        names: set[str] = set()
        for expr, eline in zip(raw, raw.item_lines, strict=True):
            if not isinstance(expr, str) or not expr.strip():
                self.add(eline, f"nodes: {expr!r} is not a hostlist", resource, layer)
                continue
            try:
                found = set(parse_nodeset(expr))
            except ValueError as exc:
                self.add(eline, f"nodes: {expr}: {exc}", resource, layer)
                continue
            if self.cluster_nodes is not None:
                unknown = found - self.cluster_nodes
                if unknown:
                    shown = NodeSet.fromlist(sorted(unknown), resolver=RESOLVER_NOGROUP)
                    self.add(eline, f"nodes: {shown} not in the cluster", resource, layer)
            names |= found
        return frozenset(names)

    def _tree(self, layers: list[LayerConf], listed: Mapping[str, bool], resource: str) -> list[LayerConf]:
        """Mode 3: a rooted, uniform-depth tree; parents inherit their children's nodes."""
        by_name = {layer.name: layer for layer in layers}
        children: dict[str, list[str]] = {name: [] for name in by_name}
        for layer in layers:
            if layer.parent in by_name:
                children[layer.parent].append(layer.name)
        roots = [layer.name for layer in layers if layer.parent is None]
        if not roots:
            self.add(
                layers[0].line if layers else 0, "Mode 3 needs one root layer (without parent_name)", resource
            )
        elif len(roots) > 1:
            self.add(
                by_name[roots[1]].line,
                f"Mode 3 needs exactly one root layer, found {', '.join(roots)} (give them a parent_name)",
                resource,
            )
        # Depths by walking up; a cycle is reported once per layer on it.
        depth: dict[str, int] = {}
        broken = False
        for layer in layers:
            path = [layer.name]
            up = layer.parent
            while up is not None and up in by_name and up not in path:
                path.append(up)
                up = by_name[up].parent
            if up is not None and up in path:
                self.add(layer.line, f"parent_name cycle: {' -> '.join([*path, up])}", resource, layer.name)
                broken = True
            elif up is None:
                depth[layer.name] = len(path) - 1
            else:
                broken = True  # an unknown parent, already reported
        for layer in layers:
            if children[layer.name] and listed.get(layer.name):
                self.add(
                    layer.line,
                    "nodes may only be listed on leaf layers in Mode 3 (a parent inherits its children's)",
                    resource,
                    layer.name,
                )
        leaves = [layer for layer in layers if not children[layer.name]]
        depths = {depth[leaf.name] for leaf in leaves if leaf.name in depth}
        if len(depths) > 1:
            expected = max(depths, key=lambda d: (sum(1 for leaf in leaves if depth.get(leaf.name) == d), d))
            for leaf in leaves:
                if leaf.name in depth and depth[leaf.name] != expected:
                    self.add(
                        leaf.line,
                        f"Mode 3 needs a uniform-depth tree: this leaf is at depth {depth[leaf.name]}, "
                        f"others at {expected}",
                        resource,
                        leaf.name,
                    )
        owner: dict[str, str] = {}
        for leaf in leaves:
            for node in sorted(leaf.nodes):
                if node in owner:
                    self.add(
                        leaf.line,
                        f"node {node} is already in leaf layer {owner[node]} (Mode 3 sums per node, "
                        "so a node belongs to one leaf)",
                        resource,
                        leaf.name,
                    )
                    break
                owner[node] = leaf.name
        if broken:
            return layers
        # Parents inherit the union of their children's nodes, deepest first.
        nodes = {layer.name: set(layer.nodes) if not children[layer.name] else set() for layer in layers}
        for layer in sorted(layers, key=lambda la: -depth.get(la.name, 0)):
            if layer.parent in nodes:
                nodes[layer.parent] |= nodes[layer.name]
        return [
            LayerConf(la.name, la.parent, frozenset(nodes[la.name]), la.count, la.base, la.disabled, la.line)
            for la in layers
        ]


def parse_resources(
    text: str,
    *,
    file: str = DEFAULT_FILE,
    cluster_nodes: Collection[str] | None = None,
    cluster_licenses: Collection[str] = (),
) -> HresConfig:
    """Validate resources.yaml text; raise :class:`ConfigError` with every problem.

    ``cluster_nodes`` (node names from slurm.conf) enables the "nodes not in the cluster"
    check; ``cluster_licenses`` are the names of ``Licenses=`` that HRES names may not reuse.
    """
    checker = _Checker(file, cluster_nodes, cluster_licenses)
    try:
        data = _parsed(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        reason = " ".join(part for part in (exc.context, exc.problem) if part)
        raise ConfigError([HresProblem(file, line, f"bad YAML: {reason}")]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([HresProblem(file, 0, f"bad YAML: {exc}")]) from None
    resources = checker.document(data)
    if checker.problems:
        raise ConfigError(sorted(checker.problems, key=lambda p: p.line))
    return HresConfig(resources, file)


def _parsed(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader


def load_resources(
    path: str | Path,
    *,
    cluster_nodes: Collection[str] | None = None,
    cluster_licenses: Collection[str] = (),
) -> HresConfig:
    """Read and validate a resources.yaml file (see :func:`parse_resources`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([HresProblem(str(path), 0, f"cannot read: {exc}")]) from None
    return parse_resources(
        text, file=str(path), cluster_nodes=cluster_nodes, cluster_licenses=cluster_licenses
    )


__all__ = [
    "DEFAULT_FILE",
    "ConfigError",
    "HresConfig",
    "HresProblem",
    "LayerConf",
    "Mode",
    "PluginConf",
    "ResourceConf",
    "base_usage",
    "load_resources",
    "parse_resources",
]
