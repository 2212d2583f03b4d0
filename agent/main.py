"""Command line of the node agent: ``fsched agent --nodes 'node[01-08]' ...``.

Defaults: the controller URL comes from ``FSCHED_URL`` (http → ws) or is
``ws://127.0.0.1:8000``; the cluster key from ``--key-file`` or ``FSCHED_AGENT_KEY``
(never the command line, which every local user can read in ``ps``); the spool is
``$FSCHED_STATE_DIR/agent/<first node>`` (``var/agent/<first node>`` without it); the
node's rules (DisableRootJobs, slurmd PowerActions) from ``$FSCHED_CONF_DIR/slurm.conf``.
CPUs and memory reported per node default to the machine's (every hosted node reports
the same); the controller schedules on its configured values and only records these.
The boot time defaults to the agent's start time (see ``Agent._settle_boot_time``).

When run as root, jobs run as their user's Unix account; otherwise as the agent's user.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import psutil
from ClusterShell.NodeSet import NodeSet, NodeSetException

from agent.containment import DEFAULT_INTERVAL
from agent.daemon import MIB, Agent, AgentConfig, NodeSpec
from agent.nodeconf import load_rules, slurm_conf_path
from agent.spool import SpoolLocked
from cluster.core.slurmconf import ConfigError

log = logging.getLogger("agent")

DEFAULT_CONTROLLER = "ws://127.0.0.1:8000"


def default_controller() -> str:
    url = os.environ.get("FSCHED_URL", "").strip()
    return url or DEFAULT_CONTROLLER


def default_spool(first_node: str) -> str:
    base = os.environ.get("FSCHED_STATE_DIR") or "var"
    return os.path.abspath(os.path.join(base, "agent", first_node))


def build_parser() -> argparse.ArgumentParser:
    # No abbreviations: "--key SECRET" must never be read as "--key-file SECRET".
    p = argparse.ArgumentParser(
        prog="fsched agent", description="Run the fsched node agent.", allow_abbrev=False
    )
    p.add_argument("--nodes", required=True, help="hostlist of the nodes served, e.g. 'node[01-08]'")
    p.add_argument("--controller", default=None, help=f"controller URL ($FSCHED_URL or {DEFAULT_CONTROLLER})")
    p.add_argument("--key", default=None, help=argparse.SUPPRESS)  # refused, with why
    p.add_argument(
        "--key-file", default=None, help="file holding the cluster key, mode 0600 (default $FSCHED_AGENT_KEY)"
    )
    p.add_argument(
        "--slurm-conf", default=None, help="slurm.conf with this node's rules ($FSCHED_CONF_DIR/slurm.conf)"
    )
    p.add_argument(
        "--allow-root-jobs", action="store_true", help="run root's jobs as root (default: DisableRootJobs)"
    )
    p.add_argument("--spool", default=None, help="spool directory (default $FSCHED_STATE_DIR/agent/NODE)")
    p.add_argument("--cpus", type=int, default=None, help="CPUs reported per node (default: this machine's)")
    p.add_argument(
        "--memory", type=int, default=None, help="MB of memory reported per node (default: this machine's)"
    )
    p.add_argument("--ping-interval", type=float, default=5.0, help="seconds between pings (%(default)s)")
    p.add_argument("--conf", default=None, help="node configuration sent in register, e.g. 'HRES=[...]'")
    p.add_argument("--features", default=None, help="comma-separated node features, e.g. a,b")
    p.add_argument("--instance-id", default=None, help="cloud instance id (cloud accounting)")
    p.add_argument("--instance-type", default=None, help="cloud instance type (cloud accounting)")
    p.add_argument("--extra", default=None, help="the node's Extra string (cloud accounting)")
    p.add_argument("--boot-time", type=float, default=None, help="boot time (epoch) reported for the nodes")
    p.add_argument(
        "--proc-root",
        default="/proc",
        help="directory whose meminfo and stat the load indices are read from (%(default)s)",
    )
    p.add_argument(
        "--usage-interval",
        type=float,
        default=DEFAULT_INTERVAL,
        help="seconds between samples of the jobs' memory and CPU time; the RSS watcher "
        "kills a job over its --mem at a sample (%(default)s)",
    )
    p.add_argument(
        "--simulate-exec",
        action="store_true",
        help="start no process: a job holds its node for FSCHED_SIM_RUN_TIME seconds of its "
        "environment (0 when unset), then completes with exit code 0 (benchmarks at scale)",
    )
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def parse_config(argv: Sequence[str] | None = None) -> tuple[AgentConfig, str]:
    """Parse the command line into an AgentConfig (and the log level); exits 2 on bad input."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        names = list(NodeSet(args.nodes))
    except NodeSetException as exc:
        parser.error(f"invalid hostlist {args.nodes!r}: {exc}")
    if not names:
        parser.error("--nodes names no node")
    for flag, value in (("--cpus", args.cpus), ("--memory", args.memory)):
        if value is not None and value < 1:
            parser.error(f"{flag} must be a positive integer")
    if args.ping_interval <= 0:
        parser.error("--ping-interval must be positive")
    if not args.usage_interval > 0:
        parser.error("--usage-interval must be positive")
    cpus = args.cpus or os.cpu_count() or 1
    memory = args.memory or psutil.virtual_memory().total // MIB
    features = ",".join(f.strip() for f in args.features.split(",") if f.strip()) if args.features else None
    cloud = {"instance_id": args.instance_id, "instance_type": args.instance_type, "extra": args.extra}
    nodes = tuple(
        NodeSpec(n, cpus, memory, features=features or None, conf=args.conf, **cloud) for n in names
    )
    if args.key is not None:
        parser.error("--key is not accepted (every local user sees the command line in ps): "
                     "use --key-file PATH or FSCHED_AGENT_KEY")  # fmt: skip
    key = read_key_file(parser, args.key_file) if args.key_file else os.environ.get("FSCHED_AGENT_KEY", "")
    if not key.strip():
        parser.error("no cluster key: give --key-file PATH or set FSCHED_AGENT_KEY")
    conf_dir = os.environ.get("FSCHED_CONF_DIR")
    conf_path = Path(args.slurm_conf) if args.slurm_conf else slurm_conf_path(conf_dir)
    try:
        rules = load_rules(conf_path)
    except ConfigError as exc:
        parser.error(f"cannot use {conf_path}:\n{exc}")
    if args.allow_root_jobs:
        rules = dataclasses.replace(rules, root_jobs=True)
    config = AgentConfig(
        controller=args.controller or default_controller(),
        key=key.strip(),
        nodes=nodes,
        spool_dir=args.spool or default_spool(names[0]),
        boot_time=args.boot_time,
        ping_interval=args.ping_interval,
        rules=rules,
        proc_root=args.proc_root,
        usage_interval=args.usage_interval,
        simulate_exec=args.simulate_exec,
    )
    return config, args.log_level


def read_key_file(parser: argparse.ArgumentParser, path: str) -> str:
    """The key in ``path``; a file others may read or write is refused, like ssh refuses
    an unprotected private key (and one its group may read gets a warning)."""
    try:
        with open(path, encoding="utf-8") as f:
            mode = os.fstat(f.fileno()).st_mode
            if mode & (stat.S_IRWXO | stat.S_IWGRP):
                parser.error(
                    f"--key-file {path}: mode {stat.S_IMODE(mode):04o} lets other users read or change the "
                    "cluster key; chmod 600 it"
                )
            if mode & stat.S_IRGRP:
                log.warning("--key-file %s is readable by its group (mode %04o)", path, stat.S_IMODE(mode))
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"--key-file {path}: {getattr(exc, 'strerror', None) or exc}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the agent; returns the exit status (0 stopped, 2 refused or bad usage)."""
    try:
        config, level = parse_config(argv)
    except SystemExit as exc:  # argparse: usage error (2) or --help (0)
        return int(exc.code or 0)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Nothing this agent starts (power programs) needs the key.
    os.environ.pop("FSCHED_AGENT_KEY", None)
    log_gres_devices(config)
    try:
        return asyncio.run(Agent(config).run())
    except KeyboardInterrupt:
        return 0
    except SpoolLocked as exc:  # another agent serves this spool: starting again cannot help
        logging.getLogger("agent").error("%s", exc)
        return 2


def log_gres_devices(config: AgentConfig) -> None:
    """Each served node's GPUs, and any device file of gres.conf that is not there (as
    slurmd logs them at start: the controller still counts the GPUs)."""
    for spec in config.nodes:
        devices = config.rules.gres_devices.get(spec.name, ())
        if devices:
            log.info("%s: %d GRES devices", spec.name, len(devices))
        for device in devices:
            if device.file and not os.path.exists(device.file):
                name, index = device.name, device.index
                log.warning("%s: %s device %d: %s does not exist", spec.name, name, index, device.file)


run = main
