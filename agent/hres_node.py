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
* ``hres_node_task_prolog`` (root, here) and ``hres_node_user_task_prolog`` (a process
  of the job's user, :mod:`agent.hres_user_task`): TaskProlog-stage hooks before
  slurm.conf's TaskProlog; a failure fails the task (``launch_failed``);
* ``hres_node_task_epilog`` (root): a TaskEpilog-stage hook after slurm.conf's; logged.

The task functions run for the batch task (node_tid and global_tid 0) and for every task
of an srun step on each of its nodes (agent/steps.py: node_tid its SLURM_LOCALID,
global_tid its SLURM_PROCID).  A step's task whose prolog fails never runs; srun hears
of it as of a failed TaskProlog (slurmstepd's error line, here the plugin's words, then
the task's exit code 1).  Their ``job.end_time`` is the job's expected end as of the
step's start (the step's launch carries the job's start and time limit).

Every call gets a new Lua state, loaded from the script at ``prep.config.path`` on this
node after :func:`luaplug.check_script` (the same path as on the controller).  A script
that cannot be loaded fails the call, logged.  Every resource's function runs even after
another one failed; the first failure is reported.  PrologTimeout and EpilogTimeout bound
each call (luaplug's instruction-count timeout).  The Lua runs in a worker thread, so the
agent's loop goes on meanwhile.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import pwd
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.prolog import HookCall, HookResult, NodeHooks, Stage
from hres.core.lua_calls import Outcome, end_time, job_table, outcome
from luaplug import CallFailed, LuaScript, ScriptError
from luaplug.codes import SUCCESS
from luaplug.hres_functions import PLUGIN, REQUIRED
from luaplug.security import trusted_uids

log = logging.getLogger("agent.hres")

JOB_PROLOG = "hres_node_job_prolog"
JOB_EPILOG = "hres_node_job_epilog"
TASK_PROLOG = "hres_node_task_prolog"
TASK_EPILOG = "hres_node_task_epilog"
USER_TASK_PROLOG = "hres_node_user_task_prolog"
# Variables of one task, which the task prolog's environment (the step's) does not have yet.
TASK_VARIABLES = frozenset({"SLURM_PROCID", "SLURM_LOCALID", "SLURM_TASK_PID", "SLURM_GTIDS"})
# The batch step has one task: node_tid and global_tid 0.
BATCH_TASK = (0, 0)
# Seconds the user task prolog's process is given past its Lua timeout to exit.
EXIT_GRACE = 5.0
OUTPUT_LIMIT = 1 << 20
ENDS_KEPT = 4096  # runs whose expected end is remembered for their task epilog


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
        tables = [script.table(dict(prep)), *(_lua_value(script, a) for a in args)]
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


@dataclass(frozen=True)
class Env:
    """A task's environment, passed as hres/lua's read-only, non-iterable ``env``."""

    values: Mapping[str, str]


def _lua_value(script: LuaScript, value: Any) -> Any:
    if isinstance(value, Env):
        return script.lookup_table(value.values)
    return script.table(value) if isinstance(value, dict | list) else value


def _job_of(call: HookCall) -> dict[str, Any]:
    """The launch object with the job's id: the facts of run_prolog and run_epilog, for
    the nodes that saw no launch, carry it beside them, not in them."""
    return {**(call.job or {}), "job_id": call.job_id}


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

    def __init__(
        self,
        *,
        slurm_user: str = "",
        clock: Callable[[], float] = time.time,
        prolog_timeout: float | None = None,
        epilog_timeout: float | None = None,
    ) -> None:
        self.trusted = trusted_uids(slurm_user or None)
        self.clock = clock
        self.prolog_timeout = prolog_timeout  # the task prologs' bound (the stage has none)
        self.epilog_timeout = epilog_timeout  # the task epilog's: EpilogTimeout bounds the epilogs
        self._ends: dict[tuple[int, int], int] = {}  # each run's expected end, at its start

    def attach(self, hooks: NodeHooks) -> None:
        hooks.add(Stage.PROLOG, self.job_prolog, when=uses_hres)
        hooks.add(Stage.EPILOG, self.job_epilog, when=uses_hres)
        # Before slurm.conf's TaskProlog: the user task prolog gets the task's environment
        # as it is before TaskProlog runs, and the root one comes before it.  Every task of
        # a step too, as slurmstepd runs them in each task it starts.
        hooks.add(Stage.TASK_PROLOG, self.user_task_prolog, when=uses_hres, first=True, steps=True)
        hooks.add(Stage.TASK_PROLOG, self.task_prolog, when=uses_hres, first=True, steps=True)
        hooks.add(Stage.TASK_EPILOG, self.task_epilog, when=uses_hres, steps=True)

    def run_all(self, job: Mapping[str, Any], function: str, *extra: Any, reverse: bool, end: int,
                timeout: float | None) -> HookResult:  # fmt: skip
        table = node_job_table(job, end)
        found = preps(job)
        called = [
            call_node_function(prep, function, table, *extra, timeout=timeout, trusted=self.trusted)
            for prep in (reversed(found) if reverse else found)
        ]
        return verdict(called)

    def expected_end(self, job: Mapping[str, Any]) -> int:
        """The start (the first call for this run) plus the time limit, or a year."""
        key = (int(job.get("job_id") or 0), int(job.get("run") or 0))
        if key not in self._ends:
            limit = job.get("time_limit")
            self._ends[key] = end_time(self.clock(), int(limit) if isinstance(limit, int) else None)
            while len(self._ends) > ENDS_KEPT:  # a run whose epilog never came here
                del self._ends[next(iter(self._ends))]
        return self._ends[key]

    def task_end(self, call: HookCall, job: Mapping[str, Any]) -> int:
        """The task functions' ``job.end_time``: the batch task's is the job's start's; a
        step's task's is taken from the step's launch, as of the step's start (a time limit
        changed since the job started counts, a later change does not)."""
        start = job.get("start_time")
        if call.task is None or not isinstance(start, int | float):
            return self.expected_end(job)
        limit = job.get("time_limit")
        return end_time(float(start), int(limit) if isinstance(limit, int) else None)

    async def job_prolog(self, call: HookCall) -> HookResult:
        job = _job_of(call)
        end = self.expected_end(job)
        return await asyncio.to_thread(
            self.run_all, job, JOB_PROLOG, reverse=False, end=end, timeout=call.timeout
        )

    async def task_prolog(self, call: HookCall) -> HookResult:
        """hres_node_task_prolog, as root (in the agent, which is the task's slurmstepd),
        with the step's environment: the task's variables are not set yet."""
        job = _job_of(call)
        env = Env({k: v for k, v in call.env.items() if k not in TASK_VARIABLES})
        result = await asyncio.to_thread(
            self.run_all, job, TASK_PROLOG, *(call.task or BATCH_TASK), env, reverse=False,
            end=self.task_end(call, job), timeout=self.prolog_timeout,
        )  # fmt: skip
        return dataclasses.replace(result, task_message=result.error)

    async def user_task_prolog(self, call: HookCall) -> HookResult:
        """hres_node_user_task_prolog in a process of the job's user (agent/hres_user_task.py);
        what it writes goes to the start of the task's output (the ``print`` lines a
        TaskProlog's output may hold)."""
        job = _job_of(call)
        node_tid, global_tid = call.task or BATCH_TASK
        request = {
            "preps": preps(job),
            "job": node_job_table(job, self.task_end(call, job)),
            "node_tid": node_tid,
            "global_tid": global_tid,
            "env": dict(call.env),
            "work_dir": call.cwd,
            "timeout": self.prolog_timeout,
            "trusted": sorted(self.trusted),
        }
        result = await run_as_user(request, call)
        return dataclasses.replace(result, task_message=result.error)

    async def task_epilog(self, call: HookCall) -> HookResult:
        """hres_node_task_epilog, as root, after the task exited, with TaskEpilog's
        environment, in the reverse of resources.yaml's order; a failure is logged."""
        job = _job_of(call)
        end = self.task_end(call, job)  # the step's start's, not a later change
        return await asyncio.to_thread(
            self.run_all, job, TASK_EPILOG, *(call.task or BATCH_TASK), Env(dict(call.env)), reverse=True,
            end=end, timeout=self.epilog_timeout,
        )  # fmt: skip

    async def job_epilog(self, call: HookCall) -> HookResult:
        # The time the job ended: its processes are gone when the Epilog stage runs.
        job = _job_of(call)
        self._ends.pop((int(job.get("job_id") or 0), int(job.get("run") or 0)), None)
        end = int(self.clock())
        return await asyncio.to_thread(
            self.run_all, job, JOB_EPILOG, reverse=True, end=end, timeout=call.timeout
        )


async def run_as_user(request: Mapping[str, Any], call: HookCall) -> HookResult:
    """agent/hres_user_task.py as ``call.run_as`` (the job's user), in the task's
    environment (``-I``: Python ignores its PYTHON* variables).  No shell: an argument
    list, the request on standard input."""
    ids: dict[str, Any] = {}
    if call.run_as.uid is not None:
        ids = {"user": call.run_as.uid, "group": call.run_as.gid, "extra_groups": list(call.run_as.groups)}
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-m", "agent.hres_user_task",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=dict(call.env), cwd="/", start_new_session=True, close_fds=True, **ids,
        )  # fmt: skip
    except (OSError, ValueError) as exc:
        return HookResult(status=1, error=f"{PLUGIN}: {USER_TASK_PROLOG}: cannot start: {exc}")
    timeout = request.get("timeout")
    try:
        out, err = await asyncio.wait_for(
            proc.communicate(json.dumps(request).encode()), float(timeout) + EXIT_GRACE if timeout else None
        )
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return HookResult(status=1, timed_out=True, error=f"{PLUGIN}: {USER_TASK_PROLOG}: timed out")
    lines = err.decode("utf-8", "replace").splitlines()
    for line in lines:
        log.info("job %d: %s", call.job_id, line)
    # The script's output, kept as it is: every line printed at the start of the task's output.
    text = out[:OUTPUT_LIMIT].decode("utf-8", "surrogateescape")
    printed = "".join(f"print {line}\n" for line in text.splitlines())
    if proc.returncode != 0:
        why = lines[-1] if lines else f"exited with status {proc.returncode}"
        return HookResult(status=1, output=printed, error=why)
    return HookResult(output=printed)
