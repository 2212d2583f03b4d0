"""What the agent itself reads from ``slurm.conf``, like slurmd does: the rules it enforces
whatever the controller sends (docs/agent-protocol.md, "What the agent decides itself").

* ``DisableRootJobs``: a root agent runs ``user=root`` jobs only when the file says
  ``DisableRootJobs=NO`` explicitly (or the agent runs with ``--allow-root-jobs``).
  Slurm's default is NO; ours is stricter, because the agent is the last line of defence
  against a controller (or a stolen cluster key) asking for uid 0.
* ``PowerAction=<name> Location=slurmd Program="..."``: the only programs a
  ``power_action`` message may run on this node.
* ``NodeFeaturesPlugins=node_features/helpers``: the ``helpers.conf`` lines whose Helper
  programs report this node's active changeable features at registration.
* ``Prolog``, ``Epilog``, ``TaskProlog``, ``TaskEpilog``, ``PrologFlags`` and their
  timeouts: what the agent runs around each job (agent/prolog.py).
* ``Gres=`` and gres.conf: each node's GPUs and their device files (a missing file is
  logged at start, as slurmd reports it).
* ``RebootProgram``: what a ``reboot`` message runs (a path with its arguments, or the
  name of a ``Location=slurmd`` PowerAction, as slurmd takes it); none, no reboot.

Pure: no Django; the file is parsed with the controller's own parser.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from cluster.core.gres_conf import GresDevice
from cluster.core.prolog_conf import PrologConfig, prolog_config
from cluster.core.slurmconf import SlurmConfig, load_slurm_conf
from power.core.config import power_config
from power.core.features import NodeFeatures, load_node_features

DEFAULT_CONF_DIR = Path(__file__).resolve().parents[1] / "examples" / "demo"


@dataclass(frozen=True)
class NodeRules:
    root_jobs: bool = False  # whether a root agent may run jobs as root
    # PowerAction name -> its Program words (Location=slurmd only).
    power_programs: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    source: str = ""  # the file they were read from, for messages
    node_features: NodeFeatures | None = field(default=None, hash=False)  # helpers.conf, if used
    reboot_program: tuple[str, ...] = ()  # RebootProgram's words; empty: none usable
    prolog: PrologConfig = field(default_factory=PrologConfig)
    cluster_name: str = ""  # SLURM_CLUSTER_NAME of the Prolog and Epilog
    slurm_user: str = ""  # SlurmUser: may own the hres/lua scripts (luaplug.security)
    # Each node's GPUs as gres.conf names them (cluster/core/gres_conf.py): checked at start.
    gres_devices: dict[str, tuple[GresDevice, ...]] = field(default_factory=dict, hash=False)

    def power_program(self, argv: list[str], node: str) -> str | None:
        """The PowerAction name whose Program, then ``node``, is exactly ``argv``; else None."""
        if not argv or argv[-1] != node:
            return None
        words = tuple(argv[:-1])
        return next((name for name, prog in self.power_programs.items() if prog == words), None)


def slurm_conf_path(conf_dir: str | None) -> Path:
    return Path(conf_dir or DEFAULT_CONF_DIR) / "slurm.conf"


def rules_from(conf: SlurmConfig, *, source: str = "") -> NodeRules:
    disable = (conf.option("DisableRootJobs") or "").strip().lower()
    actions = power_config(conf).actions
    slurmd = {n: p.argv for n, p in actions.items() if p.location == "slurmd"}
    return NodeRules(
        root_jobs=disable in ("no", "0", "false"),
        power_programs=slurmd,
        source=source,
        node_features=load_node_features(conf),
        reboot_program=reboot_argv(conf.option("RebootProgram") or "", slurmd),
        prolog=prolog_config(conf.options),
        cluster_name=conf.cluster_name,
        slurm_user=conf.option("SlurmUser") or "",
        gres_devices={n.name: n.gres_devices for n in conf.nodes if n.gres_devices},
    )


def reboot_argv(value: str, actions: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """RebootProgram's words: a slurmd PowerAction's Program, or the value split as a shell
    would (never run by one). A relative path or an unparsable value gives none."""
    value = value.strip()
    if value in actions:
        return actions[value]
    try:
        words = tuple(shlex.split(value))
    except ValueError:
        return ()
    return words if words and words[0].startswith("/") else ()


def load_rules(path: Path) -> NodeRules:
    """Read ``path``; raises ConfigError (``file:line: reason``) when it cannot be used."""
    return rules_from(load_slurm_conf(path), source=str(path))
