"""``-M``/``--clusters``: the option that names the cluster a command speaks to.

An fsched controller runs one cluster, so the option may name that cluster (slurm.conf's
``ClusterName``, in any case) or ``all``; any other name is refused the way Slurm refuses a
cluster its database does not know: one ``No cluster 'x' known by database.`` line per
unknown name and, when no name is left, the ``can't be reached now`` line, then exit 1.
The name is read from the controller only when the option is given.
"""

from __future__ import annotations

import sys

ROW = (("-M", "--clusters"), "clusters", str, "cluster_name", "cluster to issue commands to")


def add_option(parser) -> None:
    """The option on an argparse parser (the commands without a ``cli.fastargs`` table)."""
    flags, dest, _store, metavar, text = ROW
    parser.add_argument(*flags, dest=dest, metavar=metavar, help=text)


def local_cluster(client, spec: str, prog: str) -> str:
    """The local cluster's name if ``spec`` names it; else Slurm's error lines and exit 1."""
    config = client.get("/api/config/")
    local = (config.get("cluster_name") if isinstance(config, dict) else None) or "cluster"
    known = False
    for name in (word.strip() for word in spec.split(",")):
        if name.lower() in ("all", local.lower()):
            known = True
        elif name:
            sys.stderr.write(f"{prog}: error: No cluster '{name}' known by database.\n")
    if not known:
        sys.stderr.write(
            f"{prog}: error: '{spec}' can't be reached now, or it is an invalid entry for --cluster.  "
            "Use 'sacctmgr list clusters' to see available clusters.\n"
        )
        raise SystemExit(1)
    return local
