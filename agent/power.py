"""``Location=slurmd`` PowerActions: run a power program on this node (docs/agent-protocol.md).

The controller sends ``{"type": "power_action", "run_id", "node", "argv", "env"}`` once
per affected node; the program runs here with the node name as its last argument (the
controller already appended it) and ``SLURM_NODE_NAME`` set, in its own session with its
output discarded (Slurm does not log it).  When it ends the agent reports
``{"type": "power_action_done", "run_id", "node", "exit_code", "end_time", "error"}``;
a program that stops the agent itself (``shutdown -h now``) simply reports nothing.

The agent runs only what its own ``slurm.conf`` names (agent/nodeconf.py): the message's
``action`` (a PowerAction name), or else an ``argv`` that is exactly a configured
``Location=slurmd`` Program followed by the node. Anything else is answered with exit
code 127 and never started. Of the message's environment only ``SLURM_*`` names are
kept: ``LD_PRELOAD`` and friends would otherwise choose what a root program loads.

The controller cannot see a node's files, so the agent checks them: :func:`program_problem`
(Slurm's checks of a power program, as slurmctld makes them for its own) says why a
program cannot run here, and :meth:`PowerActions.report` tells the controller at
registration which configured actions this node can run. A program that fails the check
is never started either.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable

from agent.nodeconf import NodeRules
from slurmwords import agent_messages as am

log = logging.getLogger(__name__)

Emit = Callable[[am.Message], None]


def program_problem(path: str) -> str:
    """Why this node cannot run the power program ``path``, or "" when it can.

    Slurm's rules for a power program (power_save.html, "PowerAction": "accessible and
    executable by the user appropriate for the configured Location"; slurmctld also
    refuses one that is not a regular file or that group or others may write). Owned
    safely too: by root or by the agent's own user, who alone may have replaced it.
    """
    if not os.path.isabs(path):
        return "not an absolute pathname"
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"not found ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "has group or world write permission"
    if st.st_uid not in (0, os.geteuid()):
        return f"owned by uid {st.st_uid}, neither root nor the agent's user"
    if not os.access(path, os.X_OK):
        return "not executable"
    return ""


class PowerActions:
    """Runs power programs for the hosted nodes; one asyncio task per program."""

    def __init__(
        self, nodes: Iterable[str], emit: Emit, rules: NodeRules, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.nodes = frozenset(nodes)
        self.emit = emit
        self.rules = rules
        self.clock = clock
        self.tasks: set[asyncio.Task[None]] = set()

    def run(self, msg: am.PowerAction) -> None:
        """Start the program of a ``power_action`` message (from the event loop)."""
        run_id, node = msg.run_id, msg.node
        if node not in self.nodes:
            self._done(run_id, node, 127, f"node {node} is not hosted by this agent")
            return
        argv = self._configured_argv(msg, node)
        if argv is None:
            where = self.rules.source or "the agent's slurm.conf"
            what = f"PowerAction {msg.action}" if msg.action else "this program"
            log.error("power action %d on %s refused: %s is not a Location=slurmd PowerAction in %s "
                      "(argv %.200r)", run_id, node, what, where, msg.argv)  # fmt: skip
            self._done(run_id, node, 127, f"{what} is not a Location=slurmd PowerAction in {where}")
            return
        problem = program_problem(argv[0])
        if problem:
            log.error("power action %d on %s refused: program %s %s", run_id, node, argv[0], problem)
            self._done(run_id, node, 127, f"program {argv[0]} {problem}")
            return
        env = dict(os.environ)
        env.update({k: v for k, v in (msg.env or {}).items() if k.startswith("SLURM_")})
        env["SLURM_NODE_NAME"] = node
        task = asyncio.get_running_loop().create_task(self._run(run_id, node, argv, env))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def report(self) -> dict[str, str]:
        """Each Location=slurmd PowerAction of the agent's slurm.conf, with why this node
        cannot run its program ("" when it can): sent with every ``register``."""
        return {name: program_problem(argv[0]) for name, argv in sorted(self.rules.power_programs.items())}

    def _configured_argv(self, msg: am.PowerAction, node: str) -> list[str] | None:
        if msg.action is not None:
            program = self.rules.power_programs.get(msg.action)
            return None if program is None else [*program, node]
        argv = list(msg.argv or ())  # one of the two is there: the message was checked
        return argv if self.rules.power_program(argv, node) is not None else None

    async def _run(self, run_id: int, node: str, argv: list[str], env: dict[str, str]) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            log.warning("power action %d on %s: cannot start %s: %s", run_id, node, argv[0], exc)
            self._done(run_id, node, 127, f"could not start: {exc.strerror or exc}")
            return
        log.info("power action %d on %s: started %s (pid %d)", run_id, node, " ".join(argv), proc.pid)
        code = await proc.wait()
        self._done(run_id, node, code, "")

    def _done(self, run_id: int, node: str, code: int, error: str) -> None:
        self.emit(
            am.PowerActionDone(run_id=run_id, node=node, exit_code=code, end_time=self.clock(), error=error)
        )
