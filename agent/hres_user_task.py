"""hres_node_user_task_prolog as the job's user: ``python -I -m agent.hres_user_task``.

hres/lua loads this function "as the user", so it must not run in the agent, which is
root.  The agent starts this module as a process of the job's user: the kernel switches
its uid, gid and groups at exec, as for the job's own processes, so the script runs with
nothing the user lacks.  ``-I`` keeps Python from reading the user's PYTHON* variables or
site directory.  The request comes as one JSON object on standard input:

``{"preps": [...], "job": {...}, "node_tid": 0, "global_tid": 0, "env": {...},
"work_dir": "...", "timeout": seconds or null, "trusted": [uids]}``

Each resource's script (``prep.config.path``) is loaded into a new Lua state after the same
security check as on the agent (``trusted``: the agent's accounts, not this user), then
its ``hres_node_user_task_prolog(prep, job, node_tid, global_tid, env)`` is called, every
resource in order even after one failed.  ``env`` is the task's environment (a step's task
has its SLURM_PROCID and SLURM_LOCALID) with SLURM_TASK_PID, this process's id.  What the
script writes (``io.write``) is this process's standard output, which the agent puts at
the start of the task's output.
``slurm.log_*`` goes to standard error.  Exit status 0: every call succeeded.  1: one
failed, and the first failure's message is the last line of standard error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from typing import Any

from luaplug import CallFailed, LuaScript, ScriptError
from luaplug.codes import SUCCESS

FUNCTION = "hres_node_user_task_prolog"
PLUGIN = "hres/lua"
log = logging.getLogger("agent.hres")


def run(request: dict[str, Any], required: tuple[str, ...]) -> str | None:
    """Every resource's call; the first failure's message, or None."""
    trusted = frozenset(int(uid) for uid in request.get("trusted") or (0,))
    timeout = request.get("timeout")
    failed: str | None = None
    for prep in request.get("preps") or []:
        resource = str(prep.get("name") or "?")
        path = (prep.get("config") or {}).get("path")
        message = None
        if not isinstance(path, str) or not path.startswith("/"):
            message = f"{PLUGIN}: {resource}: no script path in the job's plugin configuration"
        else:
            script = LuaScript(path, plugin=PLUGIN, required=required, trusted=trusted, logger=log)
            try:
                script.load()
                result = script.call(
                    FUNCTION,
                    script.table(prep),
                    script.table(request.get("job") or {}),
                    int(request.get("node_tid") or 0),
                    int(request.get("global_tid") or 0),
                    script.lookup_table(request.get("env") or {}),
                    timeout=float(timeout) if timeout else None,
                )
            except (ScriptError, CallFailed) as exc:
                message = f"{PLUGIN}: {resource}: {FUNCTION}: {exc}"
            else:
                if result.rc != SUCCESS:
                    message = result.user_msg or f"{PLUGIN}: {resource}: {FUNCTION} returned {result.rc}"
        if message is not None:
            log.error("%s", message)
            failed = failed or message
    return failed


def main() -> int:
    from agent.hres_node import REQUIRED  # noqa: PLC0415 - after logging is set up

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    try:
        request = json.loads(sys.stdin.read())
    except ValueError as exc:
        print(f"{PLUGIN}: bad request: {exc}", file=sys.stderr)
        return 1
    # In the task's work directory, entered as the user; /tmp when it cannot be, as slurmstepd.
    try:
        os.chdir(str(request.get("work_dir") or "/"))
    except OSError:
        with contextlib.suppress(OSError):
            os.chdir("/tmp")  # noqa: S108 - slurmstepd's fallback
    # This process is the task's context for the callback: SLURM_TASK_PID is its own, as in
    # the task slurmstepd forks (the task's command is then exec'd in a process of its own).
    env = request.get("env") if isinstance(request.get("env"), dict) else {}
    request["env"] = {**env, "SLURM_TASK_PID": str(os.getpid())}
    os.environ["SLURM_TASK_PID"] = str(os.getpid())
    failed = run(request, REQUIRED)
    if failed is not None:
        print(failed.replace("\n", " "), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
