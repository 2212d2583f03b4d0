"""``scontrol reboot`` on this node: run the RebootProgram of the agent's own slurm.conf.

The controller sends ``{"type": "reboot", "node"}`` once the node is idle. The program is
the one slurm.conf names (agent/nodeconf.py), never one from the message, and is started
as slurmd starts it: its words as given (no shell), ``SLURM_NODE_NAME`` as its only
environment, in its own session so that it outlives the agent it is about to restart.
Before it starts, the node is marked in the spool: the next agent on this spool reports a
new boot time for it, which is how the controller knows the node rebooted.

If the program cannot start, or ends while the agent lives on, the agent reports
``{"type": "reboot_done", "node", "exit_code", "end_time", "error"}`` (127 and the reason
when there is no RebootProgram); a failed program leaves no mark (nothing rebooted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import threading
import time
from collections.abc import Callable, Iterable

from agent.nodeconf import NodeRules
from agent.spool import Spool
from slurmwords import agent_messages as am

log = logging.getLogger(__name__)

Emit = Callable[[am.Message], None]


class Reboots:
    def __init__(
        self,
        nodes: Iterable[str],
        emit: Emit,
        rules: NodeRules,
        spool: Spool,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.nodes = frozenset(nodes)
        self.emit = emit
        self.rules = rules
        self.spool = spool
        self.clock = clock

    def run(self, msg: am.Reboot) -> None:
        """Start the RebootProgram for ``msg.node`` (from the event loop)."""
        node = msg.node
        if node not in self.nodes:
            self._done(node, 127, f"node {node} is not hosted by this agent")
            return
        argv = list(self.rules.reboot_program)
        if not argv:
            where = self.rules.source or "the agent's slurm.conf"
            log.error("reboot of %s refused: RebootProgram isn't defined in %s", node, where)
            self._done(node, 127, f"RebootProgram isn't defined in {where}")
            return
        self.spool.mark_rebooting(node)
        try:
            # slurmd gives the program SLURM_NODE_NAME and nothing else.
            proc = subprocess.Popen(  # slurm.conf's program, as words, no shell
                argv,
                env={"SLURM_NODE_NAME": node},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            self.spool.unmark_rebooting(node)
            log.error("reboot of %s: cannot start %s: %s", node, argv[0], exc)
            self._done(node, 127, f"could not start {argv[0]}: {exc.strerror or exc}")
            return
        log.info("reboot of %s: started %s (pid %d)", node, " ".join(argv), proc.pid)
        loop = asyncio.get_running_loop()
        # A thread, not an asyncio child watcher: the loop would kill the program when the
        # agent it restarts stops, and a daemon thread holds nothing up at exit.
        threading.Thread(target=self._wait, args=(loop, proc, node), daemon=True).start()

    def _wait(self, loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes], node: str) -> None:
        code = proc.wait()
        with contextlib.suppress(RuntimeError):  # the loop has closed: the agent is gone
            loop.call_soon_threadsafe(self._ended, node, code)

    def _ended(self, node: str, code: int) -> None:
        if code != 0:
            self.spool.unmark_rebooting(node)
            log.error("reboot of %s: RebootProgram exited with status %d", node, code)
        self._done(node, code, "")

    def _done(self, node: str, code: int, error: str) -> None:
        self.emit(am.RebootDone(node=node, exit_code=code, end_time=self.clock(), error=error))
