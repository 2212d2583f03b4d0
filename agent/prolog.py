"""Prolog, Epilog, TaskProlog and TaskEpilog on the node: the ordered node-side hooks.

What runs, for each stage of a job on its batch host, in this order:

1. ``prolog_slurmd``: slurm.conf's ``Prolog`` programs, as the agent's own user (root on a
   real cluster), before the job starts. One that fails or outlives ``PrologTimeout``
   ends the launch: the agent sends ``prolog_epilog`` (``prolog_failed``) and the
   controller drains the node ("Prolog error") and requeues the job held, as slurmctld.
2. ``prolog_task``: ``TaskProlog``, as the job's user, in the job's environment and work
   directory. Its standard output is read as Slurm's slurmstepd reads it: ``export
   NAME=value`` sets a variable for the job, ``unset NAME`` removes one, ``print ...``
   writes the rest of the line to the job's standard output. One that fails cancels the
   task (Slurm's words): here a ``launch_failed``.
3. the job itself (agent/jobs.py).
4. ``epilog_task``: ``TaskEpilog``, as the job's user; its failure is only logged.
5. ``epilog_slurmd``: ``Epilog``, as the agent's user, once the job's processes are gone;
   then ``prolog_epilog`` (``epilog_done``, or ``epilog_failed``: the controller drains
   the node, "Epilog error"). The controller keeps the job COMPLETING, its resources
   held, until then.

Each stage is a list of hooks run in order until one fails: the slurm.conf programs
come first, and later node-side callbacks (hres/lua job and task prologs and epilogs)
attach with :meth:`NodeHooks.add`. A hook is an async callable taking a
:class:`HookCall` and returning a :class:`HookResult`; one added with ``when`` runs only
for the jobs (launch objects) it accepts, so other jobs take the path they took without
it. The Epilog and TaskEpilog stages run every hook even after one failed (the hres/lua
job epilog runs "after the Epilog script if one is configured, even when it failed"),
their first failure reported. A failure whose ``drain`` is false (hres/lua's ESLURM_HRES_REMOTE_FAIL) is
reported with ``drain`` false: the job is handled as for any failure, the node is not
drained.

No shell runs any of them: each program is executed by its path with an argument
list of one, as slurmd does, and no search path is set for Prolog and Epilog
(Slurm's Prolog and Epilog Guide: "these programs do not have a search path set").
``PrologFlags=Serial`` runs Prologs and Epilogs one at a time on the node.

The job's other nodes receive no launch. They run the Epilog when the controller sends
``run_epilog`` (:meth:`NodeHooks.node_epilog`), and with ``PrologFlags=Alloc`` the Prolog
at allocation when it sends ``run_prolog`` (:meth:`NodeHooks.node_prolog`), before the
batch host's launch. Without Alloc, Slurm runs a node's Prolog at the job's first step
there; fsched runs it on the batch host only, with the launch. TaskProlog and TaskEpilog
run around the batch script on the batch host, and around every task of every srun step
(agent/steps.py, through :meth:`NodeHooks.run_task`), as in Slurm. Only hooks that say so
(slurm.conf's programs, or ``add(..., steps=True)``, as hres/lua's task hooks) run for a
step's tasks. The batch host keeps the job's data for its
Epilog in memory: an Epilog after an agent restart has only SLURM_JOB_ID,
SLURMD_NODENAME and SLURM_SCRIPT_CONTEXT.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import glob
import grp
import logging
import os
import pwd
import re
import signal
import subprocess
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster.core.prolog_conf import PrologConfig
from slurmwords import agent_messages as am

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 1 << 20  # bytes of a TaskProlog's output read; the rest is dropped
NOT_RUN = 127  # the shell's status for a program that could not be started
ALLOC_RESULTS_KEPT = 1024  # allocation Prologs whose answer a repeated run_prolog gets again
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GLOB = re.compile(r"[*?\[]")
BASH = "/bin/bash"
# $1: the work directory, $2: the program; /tmp when the directory cannot be entered, as
# slurmstepd's "going to /tmp instead".
_CD_THEN_EXEC = 'cd -- "$1" 2>/dev/null || cd /tmp || exit 1; exec "$2"'


class Stage(enum.StrEnum):
    """The stages, named by Slurm's SLURM_SCRIPT_CONTEXT."""

    PROLOG = "prolog_slurmd"
    TASK_PROLOG = "prolog_task"
    TASK_EPILOG = "epilog_task"
    EPILOG = "epilog_slurmd"


@dataclass(frozen=True)
class RunAs:
    """Who a task stage runs as (agent/jobs.Account's ids); None: the agent's own user."""

    uid: int | None = None
    gid: int | None = None
    groups: tuple[int, ...] = ()


@dataclass
class HookCall:
    stage: Stage
    job_id: int
    node: str
    env: dict[str, str]
    cwd: str = "/"
    run_as: RunAs = field(default_factory=RunAs)
    timeout: float | None = None
    job: Mapping[str, Any] | None = None  # the launch object; None when the agent lost it
    # A task stage's task: (its local id on the node, its rank), SLURM_LOCALID and SLURM_PROCID;
    # None for the batch script.
    task: tuple[int, int] | None = None


@dataclass(frozen=True)
class HookResult:
    status: int = 0  # exit status; 0 is success
    signal: int = 0
    timed_out: bool = False
    output: str = ""  # standard output (read for the task prolog)
    error: str = ""  # why it failed, in words
    drain: bool = True  # whether a failure drains the node
    # What slurmstepd writes to a step's task when this TaskProlog-stage hook failed it;
    # empty: slurm.conf's TaskProlog, "TaskProlog failed status=N".
    task_message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 0 and not self.signal and not self.timed_out and not self.error


Hook = Callable[[HookCall], Awaitable[HookResult]]
Applies = Callable[[Mapping[str, Any]], bool]  # whether a hook is for this launch object


@dataclass
class TaskEdits:
    """What TaskProlog's output asks for: variables set (None: unset) and printed lines."""

    env: dict[str, str | None] = field(default_factory=dict)
    printed: list[str] = field(default_factory=list)

    def apply(self, env: dict[str, str]) -> None:
        for name, value in self.env.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value

    def write(self, fd: int) -> None:
        """The ``print`` lines, at the start of the job's standard output."""
        data = "".join(line + "\n" for line in self.printed).encode("utf-8", "surrogateescape")
        while data:
            data = data[os.write(fd, data) :]


def parse_task_output(text: str, edits: TaskEdits | None = None) -> TaskEdits:
    """slurmstepd's reading of a task prolog's output: ``export NAME=value`` (the value is
    the rest of the line, unquoted, as Slurm takes it), ``unset NAME``, ``print ...``;
    other lines are ignored."""
    edits = edits if edits is not None else TaskEdits()
    for raw in text.splitlines():
        line = raw.lstrip()
        if line.startswith("print "):
            edits.printed.append(line[len("print ") :])
        elif line.startswith("export "):
            name, eq, value = line[len("export ") :].strip().partition("=")
            if eq and _NAME.fullmatch(name) and "\0" not in value:
                edits.env[name] = value
            else:
                log.warning("task prolog: ignoring bad export line %.80r", raw)
        elif line.startswith("unset "):
            name = line[len("unset ") :].strip()
            if _NAME.fullmatch(name):
                edits.env[name] = None
    return edits


def _ids(user: str) -> tuple[str, str, str]:
    """(uid, gid, group name) of ``user`` on this node, empty where unknown."""
    try:
        pw = pwd.getpwnam(user)
    except (KeyError, ValueError):
        return "", "", ""
    try:
        group = grp.getgrgid(pw.pw_gid).gr_name
    except KeyError:
        group = ""
    return str(pw.pw_uid), str(pw.pw_gid), group


def node_environment(
    job: Mapping[str, Any] | None,
    stage: Stage,
    *,
    job_id: int,
    node: str,
    cluster: str = "",
    conf: str = "",
    exit_code: int = 0,
    signal_no: int = 0,
) -> dict[str, str]:
    """Prolog's and Epilog's environment: Slurm's list (Prolog and Epilog Guide), and no
    PATH. ``job`` is the launch object; None when the agent no longer has it."""
    env = {
        "SLURM_JOB_ID": str(job_id),
        "SLURM_JOBID": str(job_id),
        "SLURMD_NODENAME": node,
        "SLURM_SCRIPT_CONTEXT": str(stage),
    }
    if cluster:
        env["SLURM_CLUSTER_NAME"] = cluster
    if conf:
        env["SLURM_CONF"] = conf
    if job is None:
        return env
    user = str(job.get("user") or "")
    uid, gid, group = _ids(user)
    node_list = str(job.get("node_list") or node)
    values = {
        "SLURM_JOB_USER": user,
        "SLURM_JOB_UID": uid,
        "SLURM_JOB_GID": gid,
        "SLURM_JOB_GROUP": group,
        "SLURM_JOB_NODELIST": node_list,
        "SLURM_JOB_NUM_NODES": str(job.get("num_nodes") or 1),
        "SLURM_JOB_PARTITION": str(job.get("partition") or ""),
        "SLURM_JOB_ACCOUNT": str(job.get("account") or ""),
        "SLURM_JOB_NAME": str(job.get("name") or ""),
        "SLURM_JOB_WORK_DIR": str(job.get("work_dir") or ""),
        "SLURM_JOB_RESTART_COUNT": str(int(job.get("run") or 0)),
        "SLURM_JOB_STDOUT": str(job.get("std_out") or ""),
        "SLURM_JOB_STDERR": str(job.get("std_err") or job.get("std_out") or ""),
        "SLURM_JOB_STDIN": str(job.get("std_in") or ""),
    }
    env.update({k: v for k, v in values.items() if v})
    if stage == Stage.EPILOG:
        # wait(2)'s status, and exit:signal (SLURM_JOB_EXIT_CODE, SLURM_JOB_EXIT_CODE2).
        env["SLURM_JOB_EXIT_CODE"] = str(((exit_code & 0xFF) << 8) | (signal_no & 0x7F))
        env["SLURM_JOB_EXIT_CODE2"] = f"{exit_code}:{signal_no}"
    return env


def expand_programs(paths: tuple[str, ...]) -> list[str]:
    """The programs to run: each path, a glob expanded (sorted) when it runs."""
    found: list[str] = []
    for path in paths:
        found.extend(sorted(glob.glob(path)) if _GLOB.search(path) else [path])
    return found


async def run_program(path: str, call: HookCall, *, capture: bool = False) -> HookResult:
    """Run one program by its path (argv of one), in its own process group, killed with
    the group when ``call.timeout`` passes.

    Run as another user, it must not get its working directory from a ``chdir`` made
    as root before the switch (a directory it could not reach itself): a constant bash
    line changes to it after the switch, then execs the program, both given as
    arguments (agent/jobs.py's wrapper does the same for the job)."""
    ids: dict[str, Any] = {}
    argv, cwd = [path], call.cwd
    if call.run_as.uid is not None:
        ids = {"user": call.run_as.uid, "group": call.run_as.gid, "extra_groups": list(call.run_as.groups)}
        argv, cwd = [BASH, "-c", _CD_THEN_EXEC, "fsched-task-script", call.cwd, path], "/"
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if capture else asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=call.env,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
            **ids,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return HookResult(status=NOT_RUN, error=f"cannot run {path}: {exc}")

    async def finish() -> tuple[bytes, int]:
        chunks: list[bytes] = []
        kept = 0
        if proc.stdout is not None:
            # read(n) returns what has arrived so far: read to the end, keeping OUTPUT_LIMIT
            # bytes and draining the rest, so that the writer never blocks.
            while chunk := await proc.stdout.read(1 << 16):
                if kept < OUTPUT_LIMIT:
                    chunks.append(chunk[: OUTPUT_LIMIT - kept])
                    kept += len(chunks[-1])
        return b"".join(chunks), await proc.wait()

    try:
        out, rc = await asyncio.wait_for(finish(), call.timeout)
    except TimeoutError:
        _kill_group(proc.pid)
        await proc.wait()
        return HookResult(status=0, signal=int(signal.SIGKILL), timed_out=True,
                          error=f"{path} timed out after {call.timeout:g}s")  # fmt: skip
    except asyncio.CancelledError:
        _kill_group(proc.pid)
        raise
    text = out.decode("utf-8", "surrogateescape")
    if rc < 0:
        return HookResult(signal=-rc, output=text, error=f"{path} killed by signal {-rc}")
    return HookResult(status=rc, output=text, error="" if rc == 0 else f"{path} exited with status {rc}")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def script_hook(paths: tuple[str, ...]) -> Hook:
    """slurm.conf's programs of one stage, as one hook: run in order, the first failure ends it."""

    async def run(call: HookCall) -> HookResult:
        outputs = []
        for path in expand_programs(paths):
            result = await run_program(path, call, capture=call.stage == Stage.TASK_PROLOG)
            outputs.append(result.output)
            if call.stage == Stage.TASK_PROLOG:
                parse_task_output(result.output).apply(call.env)  # the next program sees it
            if not result.ok:
                output = "".join(outputs)
                return HookResult(result.status, result.signal, result.timed_out, output, result.error)
        return HookResult(output="".join(outputs))

    return run


@dataclass
class StageOutcome:
    result: HookResult
    edits: TaskEdits


class NodeHooks:
    """The node-side hooks of each stage, and the jobs between their prologue and start."""

    def __init__(self, conf: PrologConfig | None = None, *, cluster: str = "", conf_file: str = "") -> None:
        self.conf = conf or PrologConfig()
        self.cluster = cluster
        self.conf_file = conf_file
        self._hooks: dict[Stage, list[tuple[Hook, Applies | None]]] = {stage: [] for stage in Stage}
        self._step_hooks: set[Hook] = set()  # the task hooks that run for srun's tasks too
        for stage, paths in (
            (Stage.PROLOG, self.conf.prolog),
            (Stage.TASK_PROLOG, self.conf.task_prolog),
            (Stage.TASK_EPILOG, self.conf.task_epilog),
            (Stage.EPILOG, self.conf.epilog),
        ):
            if paths:
                hook = script_hook(paths)
                self._hooks[stage].append((hook, None))
                self._step_hooks.add(hook)
        # PrologFlags=Serial: one Prolog or Epilog at a time on this node.
        self._serial = asyncio.Lock() if self.conf.flag("Serial") else None
        self._jobs: dict[int, Mapping[str, Any]] = {}  # launch objects, for the Epilog's env
        self._starting: dict[int, asyncio.Task[None]] = {}
        self._cancel_after_start: dict[int, float] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # PrologFlags=Alloc: (job, run, node) -> the answer sent, or None while it runs.
        self._alloc: OrderedDict[tuple[int, int, str], am.PrologEpilog | None] = OrderedDict()

    def add(
        self,
        stage: Stage,
        hook: Hook,
        *,
        when: Applies | None = None,
        first: bool = False,
        steps: bool = False,
    ) -> None:
        """Attach a hook after those already there (slurm.conf's programs come first),
        or with ``first`` before them; with ``when``, only for the jobs whose launch
        object it accepts; with ``steps``, a task hook runs for srun's tasks too."""
        if steps:
            self._step_hooks.add(hook)
        if first:
            self._hooks[stage].insert(0, (hook, when))
        else:
            self._hooks[stage].append((hook, when))

    def _applies(self, when: Applies | None, job: Mapping[str, Any] | None) -> bool:
        return when is None or (job is not None and when(job))

    def has(self, *stages: Stage, job: Mapping[str, Any] | None = None, step: bool = False) -> bool:
        return any(
            self._applies(when, job) and (not step or hook in self._step_hooks)
            for s in stages
            for hook, when in self._hooks[s]
        )

    def has_prologue(self, job: Mapping[str, Any] | None = None) -> bool:
        return self.has(Stage.PROLOG, Stage.TASK_PROLOG, job=job)

    async def run(self, stage: Stage, call: HookCall, *, step: bool = False) -> StageOutcome:
        edits = TaskEdits()
        failed: HookResult | None = None
        for hook, when in self._hooks[stage]:
            if not self._applies(when, call.job) or (step and hook not in self._step_hooks):
                continue
            if stage in (Stage.PROLOG, Stage.EPILOG) and self._serial is not None:
                async with self._serial:
                    result = await hook(call)
            else:
                result = await hook(call)
            if stage == Stage.TASK_PROLOG:
                parse_task_output(result.output, edits)
                edits.apply(call.env)
            if result.ok:
                continue
            if stage not in (Stage.EPILOG, Stage.TASK_EPILOG):
                return StageOutcome(result, edits)
            if failed is None:
                failed = result
            elif result.drain and not failed.drain:
                failed = dataclasses.replace(failed, drain=True)  # one failure that drains is enough
        return StageOutcome(failed or HookResult(), edits)

    async def run_task(  # noqa: PLR0917 - one task's facts
        self,
        stage: Stage,
        job: Mapping[str, Any],
        node: str,
        env: dict[str, str],
        cwd: str,
        account: Any,
        *,
        step: bool = False,
        task: tuple[int, int] | None = None,
    ) -> StageOutcome:
        """TaskProlog or TaskEpilog around one task (the batch script, or with ``step`` a
        task of an srun step, ``task`` its local id and rank): as the job's user
        (``account``, agent/jobs.Account), in the task's environment ``env`` (changed: the
        caller passes a copy) and work directory."""
        env["SLURM_SCRIPT_CONTEXT"] = str(stage)
        if self.cluster:
            env["SLURM_CLUSTER_NAME"] = self.cluster
        call = HookCall(stage, int(job["job_id"]), node, env, cwd=cwd or "/",
                        run_as=RunAs(account.uid, account.gid, account.groups), job=job,
                        task=task)  # fmt: skip
        return await self.run(stage, call, step=step)

    # -- around a job -----------------------------------------------------------------

    def remember(self, job: Mapping[str, Any]) -> None:
        self._jobs[int(job["job_id"])] = job

    def starting(self, job_id: int) -> bool:
        return job_id in self._starting

    def starting_jobs(self) -> list[int]:
        """The jobs whose prologue runs: launched here, not yet started."""
        return list(self._starting)

    def prologue(self, job: Mapping[str, Any], manager: Any) -> None:
        """Run the Prolog and TaskProlog, then ``manager.launch(job, edits=...)``."""
        job_id = int(job["job_id"])
        if job_id in self._starting:
            log.info("job %d: launch repeated while its prolog runs", job_id)
            return
        self.remember(job)
        task = asyncio.get_running_loop().create_task(self._prologue(job, manager))
        self._starting[job_id] = task
        task.add_done_callback(lambda _t: self._starting.pop(job_id, None))

    async def _prologue(self, job: Mapping[str, Any], manager: Any) -> None:
        from agent.jobs import LaunchError, job_environment, resolve_account  # noqa: PLC0415 - jobs imports us

        job_id, node, run = int(job["job_id"]), str(job.get("batch_host") or ""), int(job.get("run") or 0)
        env = node_environment(job, Stage.PROLOG, job_id=job_id, node=node, cluster=self.cluster,
                               conf=self.conf_file)  # fmt: skip
        call = HookCall(Stage.PROLOG, job_id, node, env, timeout=self.conf.prolog_timeout, job=job)
        outcome = await self.run(Stage.PROLOG, call)
        if not outcome.result.ok:
            log.error("job %d: prolog failed on %s: %s", job_id, node, outcome.result.error)
            failed = am.PrologEpilog.PROLOG_FAILED
            manager.emit(am.PrologEpilog(job_id=job_id, node=node, run=run, what=failed,
                                         error=outcome.result.error, time=manager.clock(),
                                         drain=outcome.result.drain))  # fmt: skip
            self._cancel_after_start.pop(job_id, None)
            return
        edits = TaskEdits()
        # TaskProlog and TaskEpilog run around a task: an allocation-only job has none.
        if self.has(Stage.TASK_PROLOG, job=job) and job.get("allocation") is not True:
            try:
                account = resolve_account(str(job.get("user") or ""), root_jobs=manager.root_jobs)
            except LaunchError:
                account = None  # the launch itself says why, below
            if account is not None:
                outcome = await self.run_task(Stage.TASK_PROLOG, job, node, job_environment(job, account),
                                              str(job.get("work_dir") or "/"), account)  # fmt: skip
                if not outcome.result.ok:
                    error = f"task prolog failed: {outcome.result.error}"
                    manager.emit(am.LaunchFailed(job_id=job_id, node=node, error=error, time=manager.clock(),
                                                 run=run))  # fmt: skip
                    self._cancel_after_start.pop(job_id, None)
                    return
                edits = outcome.edits
        manager.launch(job, edits=edits)
        wait = self._cancel_after_start.pop(job_id, None)
        if wait is not None:
            manager.cancel(job_id, wait)

    def cancel_start(self, job_id: int, kill_wait: float) -> bool:
        """A cancel during the prologue: the job is cancelled as soon as it starts."""
        if job_id not in self._starting:
            return False
        self._cancel_after_start[job_id] = kill_wait
        return True

    def drop(self, job_id: int) -> bool:
        """``registered.kill`` during the prologue: stop it, start nothing, say nothing."""
        task = self._starting.pop(job_id, None)
        if task is None:
            return False
        task.cancel()
        self._jobs.pop(job_id, None)
        return True

    def epilogue(self, ended: Any, manager: Any) -> None:
        """The job ended (``ended``: its spool Completion): TaskEpilog, then Epilog, then
        ``prolog_epilog`` to the controller."""
        job = self._jobs.pop(ended.job_id, None)
        if not self.has(Stage.TASK_EPILOG, Stage.EPILOG, job=job):
            return
        task = asyncio.get_running_loop().create_task(self._epilogue(job, ended, manager))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _epilogue(self, job: Mapping[str, Any] | None, ended: Any, manager: Any) -> None:
        from agent.jobs import LaunchError, job_environment, resolve_account  # noqa: PLC0415 - jobs imports us

        job_id, node = int(ended.job_id), str(ended.node)
        if job is not None and self.has(Stage.TASK_EPILOG, job=job) and job.get("allocation") is not True:
            try:
                account = resolve_account(str(job.get("user") or ""), root_jobs=manager.root_jobs)
            except LaunchError:
                account = None
            if account is not None:
                outcome = await self.run_task(Stage.TASK_EPILOG, job, node, job_environment(job, account),
                                              str(job.get("work_dir") or "/"), account)  # fmt: skip
                if not outcome.result.ok:  # Slurm only logs a failed task epilog
                    log.warning("job %d: task epilog failed: %s", job_id, outcome.result.error)
        if self.has(Stage.EPILOG, job=job):
            await self._epilog(job, ended, manager)

    def node_epilog(self, msg: am.RunEpilog, manager: Any) -> None:
        """``run_epilog``: the Epilog of a job that ran on this node without its batch
        script; answered even when there is no Epilog here, so the job does not wait."""
        if msg.node not in manager.nodes:
            log.warning("job %d: run_epilog for node %s, not served here: ignored", msg.job_id, msg.node)
            return
        task = asyncio.get_running_loop().create_task(self._epilog(msg.job, msg, manager))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def node_prolog(self, msg: am.RunProlog, manager: Any) -> None:
        """``run_prolog`` (PrologFlags=Alloc): this node's Prolog at allocation, answered
        ``prolog_done`` (at once when there is no Prolog here) or ``prolog_failed``. A
        repeat (the controller resends them when a power up ends) is not run again: the
        answer is sent again, or comes when the running one ends."""
        if msg.node not in manager.nodes:
            log.warning("job %d: run_prolog for node %s, not served here: ignored", msg.job_id, msg.node)
            return
        key = (msg.job_id, msg.run, msg.node)
        if key in self._alloc:
            answer = self._alloc[key]
            if answer is not None:
                manager.emit(answer)
            return
        self._alloc[key] = None
        while len(self._alloc) > ALLOC_RESULTS_KEPT:
            self._alloc.popitem(last=False)
        task = asyncio.get_running_loop().create_task(self._alloc_prolog(msg, key, manager))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _alloc_prolog(self, msg: am.RunProlog, key: tuple[int, int, str], manager: Any) -> None:
        env = node_environment(msg.job, Stage.PROLOG, job_id=msg.job_id, node=msg.node, cluster=self.cluster,
                               conf=self.conf_file)  # fmt: skip
        timeout = self.conf.prolog_timeout
        call = HookCall(Stage.PROLOG, msg.job_id, msg.node, env, timeout=timeout, job=msg.job)
        outcome = await self.run(Stage.PROLOG, call)
        if outcome.result.ok:
            what = am.PrologEpilog.PROLOG_DONE
        else:
            what = am.PrologEpilog.PROLOG_FAILED
            log.error("job %d: prolog failed on %s: %s", msg.job_id, msg.node, outcome.result.error)
        answer = am.PrologEpilog(job_id=msg.job_id, node=msg.node, run=msg.run, what=what,
                                 error=outcome.result.error, time=manager.clock(),
                                 drain=outcome.result.drain)  # fmt: skip
        if key in self._alloc:
            self._alloc[key] = answer
        manager.emit(answer)

    async def _epilog(self, job: Mapping[str, Any] | None, ended: Any, manager: Any) -> None:
        job_id, node, run = int(ended.job_id), str(ended.node), int(ended.run or 0)
        env = node_environment(
            job, Stage.EPILOG, job_id=job_id, node=node, cluster=self.cluster, conf=self.conf_file,
            exit_code=ended.exit_code, signal_no=ended.signal,
        )  # fmt: skip
        call = HookCall(Stage.EPILOG, job_id, node, env, timeout=self.conf.epilog_timeout, job=job)
        outcome = await self.run(Stage.EPILOG, call)
        ok = outcome.result.ok
        if not ok:
            log.error("job %d: epilog failed on %s: %s", job_id, node, outcome.result.error)
        what = am.PrologEpilog.EPILOG_DONE if ok else am.PrologEpilog.EPILOG_FAILED
        manager.emit(am.PrologEpilog(job_id=job_id, node=node, run=run, what=what, error=outcome.result.error,
                                     time=manager.clock(), drain=outcome.result.drain))  # fmt: skip

    def close(self) -> None:
        for task in [*self._starting.values(), *self._tasks]:
            task.cancel()
