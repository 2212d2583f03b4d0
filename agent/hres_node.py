"""hres/lua's node job prolog and epilog (Slurm's hres.html, "Callbacks"), on the agent.

The launch of a job that uses resources with a plugin carries each one's ``prep`` in
resources.yaml's order (LaunchJob ``hres``: name, config, plugin_args, payload,
async_running, layers), fixed when the job started.  Two hooks attach to the node's
stages (:class:`agent.prolog.NodeHooks`), for those jobs only:

* ``hres_node_job_prolog(prep, job)``: a Prolog-stage hook, after slurm.conf's Prolog
  programs, once on the node where the Prolog runs (the batch host).  A failure is the
  Prolog's: the controller requeues the job held, or cancels it when it cannot be
  requeued, and drains the node, unless every failure was ESLURM_HRES_REMOTE_FAIL;
* ``hres_node_job_epilog(prep, job)``: an Epilog-stage hook, after slurm.conf's Epilog
  even when it failed, in the reverse of resources.yaml's order.  A failure drains the
  node, unless ESLURM_HRES_REMOTE_FAIL.

Every call gets a new Lua state, loaded from the script at ``prep.config.path`` on this
node after :func:`luaplug.check_script` (the same path as on the controller).  A script
that cannot be loaded fails the call, logged.  Every resource's function runs even after
another one failed; the first failure is reported.  PrologTimeout and EpilogTimeout bound
each call (luaplug's instruction-count timeout).  The Lua runs in a worker thread, so the
agent's loop goes on meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import pwd
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.prolog import HookCall, HookResult, NodeHooks, Stage
from hres.core.lua_calls import Outcome, end_time, job_table, outcome
from luaplug import CallFailed, LuaScript, ScriptError
from luaplug.codes import SUCCESS
from luaplug.security import trusted_uids

log = logging.getLogger("agent.hres")

PLUGIN = "hres/lua"
# Every function of hres/lua but the two optional ones (hres.lua_plugins.REQUIRED): a
# script that lacks one fails to load here as on the controller.
REQUIRED = (
    "hres_create_context",
    "hres_destroy_context",
    "hres_maintenance",
    "hres_controller_job_prerun",
    "hres_controller_job_revoke",
    "hres_controller_job_epilog",
    "hres_node_job_prolog",
    "hres_node_job_epilog",
    "hres_node_task_prolog",
    "hres_node_task_epilog",
    "hres_node_user_task_prolog",
)
JOB_PROLOG = "hres_node_job_prolog"
JOB_EPILOG = "hres_node_job_epilog"


def preps(job: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The launch's ``hres``: one ``prep`` per resource with a plugin (empty: none)."""
    found = job.get("hres") if job is not None else None
    return [p for p in found if isinstance(p, dict)] if isinstance(found, list) else []


def uses_hres(job: Mapping[str, Any]) -> bool:
    return bool(preps(job))


@dataclass(frozen=True)
class NodeCalled:
    """One resource's call: its return code (ERROR when it could not run) and why."""

    resource: str
    rc: int
    message: str = ""

    @property
    def outcome(self) -> Outcome:
        return outcome(self.rc)


def _ids(user: str) -> tuple[int | None, int | None]:
    try:
        entry = pwd.getpwnam(user)
    except (KeyError, TypeError, ValueError):
        return None, None
    return entry.pw_uid, entry.pw_gid


def node_job_table(job: Mapping[str, Any], end: int) -> dict[str, Any]:
    """``job`` as the controller's callbacks get it, from the launch object; the ids are
    this node's for the job's user."""
    user = str(job.get("user") or "")
    uid, gid = _ids(user)
    table = job_table(
        job_id=int(job["job_id"]),
        run=int(job.get("run") or 0),
        user=user,
        uid=uid,
        gid=gid,
        account=str(job.get("account") or ""),
        partition=str(job.get("partition") or ""),
        nodes=(),
        end=end,
    )
    table["nodes"] = str(job.get("node_list") or "")  # already a hostlist
    return table


def call_node_function(
    prep: Mapping[str, Any],
    function: str,
    *args: Any,
    timeout: float | None,
    trusted: frozenset[int],
    logger: logging.Logger = log,
) -> NodeCalled:
    """``function(prep, *args)`` of the resource's script, in a new Lua state."""
    resource = str(prep.get("name") or "?")
    config = prep.get("config")
    path = config.get("path") if isinstance(config, Mapping) else None
    if not isinstance(path, str) or not path.startswith("/"):
        message = f"{PLUGIN}: {resource}: no script path in the job's plugin configuration"
        logger.error("%s", message)
        return NodeCalled(resource, -1, message)
    script = LuaScript(path, plugin=PLUGIN, required=REQUIRED, trusted=trusted, logger=logger)
    try:
        script.load()
        tables = [script.table(dict(prep)), *(script.table(a) for a in args)]
        result = script.call(function, *tables, timeout=timeout)
    except (ScriptError, CallFailed) as exc:
        message = f"{PLUGIN}: {resource}: {function}: {exc}"
        logger.error("%s", message)
        return NodeCalled(resource, -1, message)
    if result.rc != SUCCESS:
        message = result.user_msg or f"{PLUGIN}: {resource}: {function} returned {result.rc}"
        logger.error("%s", message)
        return NodeCalled(resource, result.rc, message)
    return NodeCalled(resource, SUCCESS)


def verdict(called: Sequence[NodeCalled]) -> HookResult:
    """The stage's result: the first failure's message; the node drained unless every
    failure was ESLURM_HRES_REMOTE_FAIL."""
    failed = [c for c in called if c.rc != SUCCESS]
    if not failed:
        return HookResult()
    drain = any(c.outcome is not Outcome.REMOTE_FAIL for c in failed)
    return HookResult(status=1, error=failed[0].message, drain=drain)


class HresNodeHooks:
    """The job prolog and epilog hooks; ``clock`` gives the Unix time (job.end_time)."""

    def __init__(self, *, slurm_user: str = "", clock: Callable[[], float] = time.time) -> None:
        self.trusted = trusted_uids(slurm_user or None)
        self.clock = clock

    def attach(self, hooks: NodeHooks) -> None:
        hooks.add(Stage.PROLOG, self.job_prolog, when=uses_hres)
        hooks.add(Stage.EPILOG, self.job_epilog, when=uses_hres)

    def run_all(self, job: Mapping[str, Any], function: str, *, reverse: bool, end: int,
                timeout: float | None) -> HookResult:  # fmt: skip
        table = node_job_table(job, end)
        found = preps(job)
        called = [
            call_node_function(prep, function, table, timeout=timeout, trusted=self.trusted)
            for prep in (reversed(found) if reverse else found)
        ]
        return verdict(called)

    async def job_prolog(self, call: HookCall) -> HookResult:
        job = call.job or {}
        # The expected end: the start (now) plus the time limit, or a year without one.
        limit = job.get("time_limit")
        end = end_time(self.clock(), int(limit) if isinstance(limit, int) else None)
        return await asyncio.to_thread(
            self.run_all, job, JOB_PROLOG, reverse=False, end=end, timeout=call.timeout
        )

    async def job_epilog(self, call: HookCall) -> HookResult:
        # The time the job ended: its processes are gone when the Epilog stage runs.
        end = int(self.clock())
        return await asyncio.to_thread(
            self.run_all, call.job or {}, JOB_EPILOG, reverse=True, end=end, timeout=call.timeout
        )
