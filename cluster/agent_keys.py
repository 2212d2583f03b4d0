"""Optional per-node agent keys: ``$FSCHED_CONF_DIR/agent_keys`` (docs/agent-protocol.md).

One line per key, ``<hostlist> <key>``, ``#`` comments. An agent whose ``hello`` names
only nodes of one line must prove that line's key, and may then register only those
nodes; a node listed here can be registered with its own key only, never with the
cluster key. A stolen node key speaks for its nodes alone. The file holds secrets: it is
refused unless only its owner may read it.

Pure: no Django; the caller passes the path and gets a ``NodeKeys`` or a ``ValueError``
naming ``file:line``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cluster.core import hostlists

MAX_NODES = 1_000_000  # a line naming more is a typo, not a cluster


@dataclass(frozen=True)
class NodeKeys:
    entries: tuple[tuple[frozenset[str], bytes], ...] = ()

    def key_of(self, node: str) -> bytes | None:
        return next((key for nodes, key in self.entries if node in nodes), None)

    def scope(self, nodes: Iterable[str]) -> tuple[bytes, frozenset[str]] | str | None:
        """For an agent naming ``nodes``: (key, the nodes it may register), None when none
        of them has its own key (the cluster key, for nodes without one), or why not."""
        names = list(nodes)
        lines = {i for i, (keyed, _) in enumerate(self.entries) for n in names if n in keyed}
        if not lines:
            return None
        if len(lines) > 1 or any(self.key_of(n) is None for n in names):
            return "its nodes have different keys"
        keyed, key = self.entries[lines.pop()]
        return key, keyed


def load(path: Path) -> NodeKeys:
    """Read ``path`` (missing: no per-node keys). Raises ValueError with ``file:line``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return NodeKeys()
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, encoding="utf-8", errors="strict") as f:
        mode = os.fstat(f.fileno()).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ValueError(
                f"{path}: mode {stat.S_IMODE(mode):04o}: other users may read the keys; chmod 600"
            )
        try:
            text = f.read()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text ({exc.reason})") from None
    entries: list[tuple[frozenset[str], bytes]] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if len(words) != 2:
            raise ValueError(f"{path.name}:{number}: expected '<hostlist> <key>'")
        try:
            # Sized before it is built: a NodeSet of node[1-99999999] alone takes gigabytes.
            nodeset = hostlists.parse(words[0], limit=MAX_NODES, what="hostlist")
        except hostlists.HostlistTooLarge:
            raise ValueError(f"{path.name}:{number}: more than {MAX_NODES} nodes") from None
        except hostlists.HostlistError as exc:
            raise ValueError(f"{path.name}:{number}: invalid hostlist {words[0]!r}: {exc.detail}") from None
        names = frozenset(nodeset)
        for name in names:
            if name in seen:
                raise ValueError(f"{path.name}:{number}: node {name} already has a key (line {seen[name]})")
            seen[name] = number
        entries.append((names, words[1].encode()))
    return NodeKeys(tuple(entries))
