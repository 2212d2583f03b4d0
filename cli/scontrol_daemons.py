"""``scontrol show daemons``: which of Slurm's daemons this host runs, by the
configuration (src/scontrol/scontrol.c's ``_print_daemons``): ``slurmctld`` when a
SlurmctldHost is this host (short or full name) or ``localhost``, ``slurmd`` when a node's
host name or node name is this host (or ``localhost``) and a controller is configured.
fsched's controller is the server and its slurmd the agent; the words stay Slurm's, so a
site's scripts that ask ``scontrol show daemons`` keep working. Neither: ``(null)``, as C
prints a NULL string."""

from __future__ import annotations

import socket
import sys


def controller_hosts(value: str) -> list[str]:
    """SlurmctldHost's names: ``ctl1(10.0.0.1)`` is ctl1; several lines or commas give
    several."""
    hosts = []
    for line in str(value or "").replace("\n", ",").split(","):
        name = line.split("(", 1)[0].strip()
        if name:
            hosts.append(name)
    return hosts


def node_host(node: dict) -> str:
    """A node's NodeHostName: its agent's host, or its name (as ``scontrol show node``)."""
    return (node.get("agent") or "").split(":")[0] or str(node.get("name") or "")


def daemons(controllers: list[str], nodes: list[dict], long_name: str) -> str:
    short = long_name.split(".", 1)[0]
    mine = {short, long_name, "localhost"}
    ctld = any(host in mine or host.lower() == "localhost" for host in controllers)
    slurmd = any(node_host(n) in (short, "localhost") or n.get("name") in (short, "localhost") for n in nodes)
    words = []
    if controllers and ctld:
        words.append("slurmctld ")
    if controllers and slurmd:
        words.append("slurmd")
    return "".join(words) or "(null)"


def show_daemons(client, name: str | None, opts) -> int:
    options = (client.get("/api/config/") or {}).get("options") or {}
    nodes = client.get_all("/api/nodes/", {})
    controllers = controller_hosts(options.get("SlurmctldHost", ""))
    sys.stdout.write(daemons(controllers, nodes, socket.gethostname()) + "\n")
    return 0
