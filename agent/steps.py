"""A job step's tasks on this agent's nodes (``step_launch``, docs/steps.md).

For each node of the step the controller sends a ``step_launch``. The agent connects to
the srun that asked for the step (its address and the step's key are in the message),
proves the key (slurmwords/step_io.py), starts the node's tasks as the job's user (exec
of the command's argv, no shell), each bound to its share of the step's CPUs, and streams
their output and exits to srun over that connection: task output never goes through the
controller. Once every task has ended it tells the controller ``step_done``.

``-o/-e/-i`` (srun's file name patterns, expanded per task) are opened here, as the job's
user; a task without them writes to srun. Under ``srun --pty`` task 0 runs on a
pseudo-terminal the agent opens (its session's controlling terminal, of the size srun's
terminal has, resized by srun's WINCH frames): its output is read from the terminal and
srun's input written to it; the other tasks' output and input are /dev/null, as srun's
``--pty`` sets them.

slurm.conf's TaskProlog and TaskEpilog run around every task, as slurmstepd runs them,
through the batch script's own path (agent/prolog.NodeHooks.run_task): TaskProlog in the
task's environment before it starts, its ``export``/``unset`` lines changing that task's
environment and its ``print`` lines starting that task's output; one that fails fails the
task (slurmstepd's "TaskProlog failed"), and the task never runs. TaskEpilog runs once the
task has ended, before srun hears of its exit; its failure is only logged. hres/lua's task
functions run in the same stages for the jobs that use a resource with a plugin
(agent/hres_node.py), each task's local id and rank given as node_tid and global_tid.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import resource
import signal
import struct
import subprocess
import termios
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent import paths
from agent.containment import Containment
from agent.jobs import (
    Account,
    LaunchError,
    _check_work_dir,
    effective,
    job_environment,
    parse_signal,
    resolve_account,
)
from agent.prolog import NodeHooks, Stage, TaskEdits
from slurmwords import agent_messages as am
from slurmwords import step_io, step_layout
from slurmwords.stdio_patterns import PatternFields, expand

log = logging.getLogger("fsched.agent.steps")

CONNECT_TIMEOUT = 10.0
READ_SIZE = 1 << 16
TERMINAL_DRAIN = 1.0  # seconds a task's terminal is read after the task ended


class ExecFailed(LaunchError):
    """A task's command could not be exec'd: its exit code is the errno, as slurmstepd's."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Task:
    task: int
    popen: subprocess.Popen[bytes]
    exit_code: int = 0
    signal: int = 0
    env: dict[str, str] = field(default_factory=dict)  # before TaskProlog's edits: TaskEpilog's
    pty: int | None = None  # srun --pty: the terminal's master side, task 0's output and input
    end: am.TaskEnd | None = None  # its figures from its reaping


def _open_pty(rows: int | None, cols: int | None, account: Account) -> tuple[int, int]:
    """A pseudo-terminal of srun's terminal's size, its task side the job user's."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    if rows and cols:
        _resize(master, rows, cols)
    if account.switches:
        with contextlib.suppress(OSError):
            os.fchown(slave, account.uid, account.gid)  # type: ignore[arg-type]
    return master, slave


def _resize(fd: int, rows: int, cols: int) -> None:
    """TIOCSWINSZ: the kernel then sends SIGWINCH to the terminal's foreground processes."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _take_terminal() -> None:
    """In the task's child, between fork and exec (after setsid): its standard input, the
    pseudo-terminal, becomes the session's controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@dataclass
class TaskSetting:
    """What a step's tasks run as and where: for their TaskProlog and TaskEpilog."""

    account: Account
    job: dict[str, Any]
    work_dir: str


@dataclass
class RunningStep:
    msg: am.StepLaunch
    tasks: list[Task] = field(default_factory=list)
    signals: list[int] = field(default_factory=list)  # asked for before the tasks existed
    failed: dict[int, int] = field(default_factory=dict)  # task -> exit code: its TaskProlog failed
    setting: TaskSetting | None = None


class StepRunner:
    """The steps running on this agent's nodes, by (job, step, node)."""

    def __init__(
        self,
        nodes: list[str],
        containment: Containment,
        emit: Callable[[am.Message], None],
        *,
        clock: Callable[[], float],
        root_jobs: bool,
        hooks: NodeHooks | None = None,
    ) -> None:
        self.hooks = hooks or NodeHooks()  # the agent's TaskProlog and TaskEpilog (agent/prolog.py)
        self.nodes = nodes
        self.containment = containment
        self.emit = emit
        self.clock = clock
        self.root_jobs = root_jobs
        self.running: dict[tuple[int, int, str], RunningStep] = {}

    def launch(self, msg: am.StepLaunch) -> None:
        key = (msg.job_id, msg.step_id, msg.node)
        if msg.node not in self.nodes or key in self.running:
            log.warning(
                "step %d.%d on %s: not ours or already running, ignored", msg.job_id, msg.step_id, msg.node
            )
            return
        self.running[key] = RunningStep(msg)
        asyncio.get_running_loop().create_task(self._run(key))

    def signal(self, msg: am.StepSignal) -> None:
        step = self.running.get((msg.job_id, msg.step_id, msg.node))
        if step is None:
            log.info(
                "step %d.%d on %s: signal %s for no running step",
                msg.job_id,
                msg.step_id,
                msg.node,
                msg.signal,
            )
            return
        sig = int(parse_signal(msg.signal))
        step.signals.append(sig)
        for t in step.tasks:
            _signal_task(t, sig)

    async def _run(self, key: tuple[int, int, str]) -> None:
        step = self.running[key]
        msg = step.msg
        name = f"{msg.job_id}.{msg.step_id}"
        writer: asyncio.StreamWriter | None = None
        exit_code, sig, error = 0, 0, ""
        try:
            reader, writer = await self._connect(msg)
            try:
                exit_code, sig = await self._run_tasks(step, reader, writer)
            except LaunchError as exc:
                error = str(exc)
                # slurmstepd's task that cannot exec exits with the errno (2: not found).
                exit_code = exc.code if isinstance(exc, ExecFailed) else 1
                text = f"slurmstepd: error: {msg.node}: StepId={name}: {error}\n".encode()
                started = {t.task for t in step.tasks} | set(step.failed)  # their exits already sent
                for task in msg.tasks:
                    if task not in started:
                        writer.write(step_io.pack(step_io.ERR, task, text))
                        writer.write(step_io.pack_exit(task, exit_code, 0))
            await writer.drain()
        except (OSError, EOFError, step_io.FrameError, TimeoutError, asyncio.IncompleteReadError) as exc:
            error = error or f"cannot reach srun at {msg.io_host}:{msg.io_port}: {exc}"
            exit_code = exit_code or 1
            for t in step.tasks:  # srun is gone: its tasks go with it, as Slurm's do
                _signal_task(t, signal.SIGKILL)
        except Exception as exc:
            log.exception("step %s on %s failed", name, msg.node)
            error, exit_code = f"{type(exc).__name__}: {exc}", exit_code or 1
        finally:
            if writer is not None:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
            del self.running[key]
            self._release(msg.job_id)
        if error:
            log.warning("step %s on %s: %s", name, msg.node, error)
        ends = [t.end for t in step.tasks if t.end is not None] or None
        self.emit(am.StepDone(job_id=msg.job_id, step_id=msg.step_id, node=msg.node, exit_code=exit_code,
                              signal=sig, time=self.clock(), error=error[:500], tasks=ends))  # fmt: skip

    async def _connect(self, msg: am.StepLaunch) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(msg.io_host, msg.io_port), CONNECT_TIMEOUT
        )
        step = f"{msg.job_id}.{msg.step_id}"
        ours = step_io.new_nonce()
        hello = {"job_id": msg.job_id, "step_id": msg.step_id, "node": msg.node, "nonce": ours}
        writer.write(step_io.pack_json(step_io.HELLO, hello))
        frames = step_io.FrameReader()
        got: list[tuple[int, int, bytes]] = []
        while not got:
            data = await asyncio.wait_for(reader.read(READ_SIZE), CONNECT_TIMEOUT)
            if not data:
                raise EOFError("srun closed the connection during the handshake")
            got = frames.feed(data)
        kind, _, payload = got[0]
        body = step_io.unpack_json(payload)
        theirs = body.get("nonce")
        expected = step_io.srun_proof(msg.io_key, ours, str(theirs), step, msg.node)
        if (
            kind != step_io.CHALLENGE
            or not isinstance(theirs, str)
            or not step_io.proven(expected, body.get("proof"))
        ):
            raise step_io.FrameError("srun failed to prove the step's key")
        proof = step_io.task_proof(msg.io_key, theirs, ours, step, msg.node)
        writer.write(step_io.pack_json(step_io.AUTH, {"proof": proof}))
        await writer.drain()
        return reader, writer

    async def _run_tasks(
        self, step: RunningStep, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[int, int]:
        msg = step.msg
        account = resolve_account(str(msg.job.get("user") or ""), root_jobs=self.root_jobs)
        base = {**msg.environment}
        job = {**msg.job, "environment": base, "batch_host": msg.node}
        work_dir = msg.work_dir or "/"
        with effective(account):
            _check_work_dir(work_dir)
        step.setting = TaskSetting(account, job, work_dir)
        envs = [self._task_env(msg, job, account, i, task) for i, task in enumerate(msg.tasks)]
        edits = await self._task_prologs(step, envs, writer)
        pumps: list[asyncio.Task[None]] = []
        try:
            self._spawn_all(step, account, envs, edits, work_dir, writer, pumps)
        except LaunchError:
            for t in step.tasks:  # a step starts whole or not at all
                _signal_task(t, signal.SIGKILL)
            await asyncio.gather(*pumps, return_exceptions=True)
            raise
        feeder = asyncio.create_task(self._feed(step, reader))
        warning = self._arm_warning(step)
        try:
            await asyncio.gather(*pumps)
        finally:
            if warning is not None:
                warning.cancel()
            feeder.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await feeder
        worst = max([t.exit_code for t in step.tasks] + list(step.failed.values()), default=0)
        sig = next((t.signal for t in step.tasks if t.signal), 0)
        return worst, sig

    def _arm_warning(self, step: RunningStep) -> asyncio.TimerHandle | None:
        """sbatch ``--signal=SIG@TIME`` (no ``B:``): the step's tasks get SIG at the time the
        controller computed, as Slurm signals every step of the job, not its batch shell."""
        msg = step.msg
        if not msg.warn_signal or msg.warn_at is None:
            return None
        sig = int(msg.warn_signal)

        def fire() -> None:
            log.info("step %d.%d on %s: --signal %d", msg.job_id, msg.step_id, msg.node, sig)
            step.signals.append(sig)
            for t in step.tasks:
                _signal_task(t, sig)

        return asyncio.get_running_loop().call_later(max(0.0, msg.warn_at - self.clock()), fire)

    def _spawn_all(  # noqa: PLR0917 - the step's facts, from its one caller
        self,
        step: RunningStep,
        account: Account,
        envs: list[dict[str, str]],
        edits: list[TaskEdits | None],
        work_dir: str,
        writer: asyncio.StreamWriter,
        pumps: list[asyncio.Task[None]],
    ) -> None:
        msg = step.msg
        count = max(int(msg.job.get("cpus_on_node") or 1), 1)
        cpt = max(msg.cpus_per_task or 1, 1)
        local = len(msg.tasks)
        for i, task in enumerate(msg.tasks):
            edit = edits[i]
            if edit is None:  # its TaskProlog failed: it does not run
                continue
            env = dict(envs[i])
            edit.apply(env)
            # Each task its own slice of the step's CPUs when there are enough, else all of
            # them (and all of them with srun --cpu-bind=none).
            ids = msg.cpu_ids
            if len(ids) >= local * cpt and msg.cpu_bind != "none":
                ids = ids[i * cpt : (i + 1) * cpt]
            cpus = self.containment.step_cpus(msg.job_id, msg.node, count, ids) if ids else ()
            t = self._spawn(msg, task, account, env, work_dir, cpus, edit)
            t.env = envs[i]
            if msg.cpu_bind_verbose and t.popen.stderr is not None:
                line = binding_line(msg, task, i, t.popen.pid)
                writer.write(step_io.pack(step_io.ERR, task, line.encode()))
            if edit.printed and t.popen.stdout is not None:  # TaskProlog's print lines come first
                text = "".join(line + "\n" for line in edit.printed).encode("utf-8", "surrogateescape")
                writer.write(step_io.pack(step_io.OUT, task, text))
            step.tasks.append(t)
            for sig in step.signals:
                _signal_task(t, sig)
            pumps.append(asyncio.create_task(self._pump(step, t, writer)))

    @staticmethod
    def _task_env(
        msg: am.StepLaunch, job: dict[str, Any], account: Account, local: int, task: int
    ) -> dict[str, str]:
        env = job_environment(job, account)
        env.update(step_layout.step_task_env(
            job_id=msg.job_id, step_id=msg.step_id, task=task, local=local, node_index=msg.node_index,
            node=msg.node, ntasks=msg.ntasks, node_list=msg.node_list, num_nodes=msg.num_nodes,
            tasks_per_node=msg.tasks_per_node, cpus_per_task=msg.cpus_per_task,
            preserve=msg.environment if msg.preserve_env else None,
        ))  # fmt: skip
        env["SLURM_LAUNCH_NODE_IPADDR"] = msg.io_host  # where srun runs, as Slurm sets it
        env["SLURM_GTIDS"] = ",".join(map(str, msg.tasks))  # the node's tasks, not the batch task's
        return env

    async def _task_prologs(
        self, step: RunningStep, envs: list[dict[str, str]], writer: asyncio.StreamWriter
    ) -> list[TaskEdits | None]:
        """Each task's TaskProlog, all at once (slurmstepd runs it in each task's own child):
        its edits, or None when it failed; that task's error and exit are sent to srun then."""
        msg, setting = step.msg, step.setting
        assert setting is not None
        if not self.hooks.has(Stage.TASK_PROLOG, job=setting.job, step=True):
            return [TaskEdits() for _ in envs]
        outcomes = await asyncio.gather(*(
            self.hooks.run_task(Stage.TASK_PROLOG, setting.job, msg.node, dict(env), setting.work_dir,
                                setting.account, step=True, task=(local, task))
            for local, (task, env) in enumerate(zip(msg.tasks, envs, strict=True))
        ))  # fmt: skip
        edits: list[TaskEdits | None] = []
        for task, outcome in zip(msg.tasks, outcomes, strict=True):
            result = outcome.result
            if result.ok:
                edits.append(outcome.edits)
                continue
            # slurmstepd's task ends with the TaskProlog's status, its command never exec'd.
            code = result.status or 1
            step.failed[task] = code
            name = f"{msg.job_id}.{msg.step_id}"
            log.warning("step %s task %d on %s: TaskProlog failed: %s", name, task, msg.node, result.error)
            # A hook's own words (hres/lua's task prologs), else slurmstepd's for TaskProlog.
            words = " ".join(result.task_message.split("\n")) or f"TaskProlog failed status={code}"
            text = f"slurmstepd: error: {msg.node}: StepId={name}: {words}\n"
            writer.write(step_io.pack(step_io.ERR, task, text.encode("utf-8", "surrogateescape")))
            writer.write(step_io.pack_exit(task, code, 0))
            edits.append(None)
        return edits

    async def _task_epilog(self, step: RunningStep, t: Task) -> None:
        msg, setting = step.msg, step.setting
        if setting is None or not self.hooks.has(Stage.TASK_EPILOG, job=setting.job, step=True):
            return
        local = msg.tasks.index(t.task)
        outcome = await self.hooks.run_task(Stage.TASK_EPILOG, setting.job, msg.node, dict(t.env),
                                            setting.work_dir, setting.account, step=True,
                                            task=(local, t.task))  # fmt: skip
        if not outcome.result.ok:  # Slurm only logs a failed task epilog
            log.warning("step %d.%d task %d on %s: TaskEpilog failed: %s",
                        msg.job_id, msg.step_id, t.task, msg.node, outcome.result.error)  # fmt: skip

    def _spawn(  # noqa: PLR0917 - one task's facts, from one caller
        self,
        msg: am.StepLaunch,
        task: int,
        account: Account,
        env: dict[str, str],
        work_dir: str,
        cpus: tuple[int, ...],
        edits: TaskEdits,
    ) -> Task:
        fields = PatternFields(
            job_id=msg.job_id, name=str(msg.job.get("name") or ""), user=account.name, node=msg.node,
            step_id=msg.step_id, task_id=task, node_id=msg.node_index,
        )  # fmt: skip
        opened: list[int] = []

        def named(pattern: str | None, flags: int, what: str) -> int | None:
            if not pattern:
                return None
            path = paths.resolve(expand(pattern, fields), work_dir)
            try:
                fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise LaunchError(f"could not open {what} file {path}: {exc.strerror}") from None
            opened.append(fd)
            return fd

        master: int | None = None
        try:
            with effective(account):
                # Tasks of one node writing one file share it: appended, never truncated
                # under another task's feet (each task's own name is truncated by its open).
                flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
                out = named(msg.std_out, flags, "stdout")
                err = named(msg.std_err, flags, "stderr")
                stdin = named(msg.std_in, os.O_RDONLY, "stdin")
            if msg.pty and task == 0:
                master, slave = _open_pty(msg.pty_rows, msg.pty_cols, account)
                opened.append(slave)
                out = err = stdin = slave
            elif msg.pty:
                out = err = stdin = named(os.devnull, os.O_RDWR, "/dev/null")
            if out is not None:
                edits.write(out)  # TaskProlog's print lines, at the start of the task's output
            ids: dict[str, Any] = {}
            if account.switches:
                ids = {"user": account.uid, "group": account.gid, "extra_groups": list(account.groups)}
            argv = (msg.task_argv or {}).get(str(task)) or msg.argv  # srun --multi-prog's own
            saved = None
            try:
                if cpus and self.containment.affinity:
                    saved = os.sched_getaffinity(0)
                    os.sched_setaffinity(0, cpus)
                # argv is exec'd as given: no shell ever sees the user's words.
                popen = subprocess.Popen(
                    argv,
                    # No -i: the task reads srun's own input, forwarded (srun's --input=all).
                    stdin=subprocess.PIPE if stdin is None else stdin,
                    stdout=subprocess.PIPE if out is None else out,
                    stderr=subprocess.PIPE if err is None and out is None else (out if err is None else err),
                    env=env,
                    cwd=work_dir,
                    start_new_session=True,
                    close_fds=True,
                    # Only an ioctl of the child's own fd 0, no lock of this process taken.
                    preexec_fn=_take_terminal if master is not None else None,  # noqa: PLW1509
                    **ids,
                )
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                if master is not None:
                    os.close(master)
                why = getattr(exc, "strerror", None) or exc
                raise ExecFailed(
                    f"execve(): {argv[0]}: {why}",
                    getattr(exc, "errno", None) or 1,
                ) from None
            finally:
                if saved is not None:
                    os.sched_setaffinity(0, saved)
        finally:
            for fd in opened:
                os.close(fd)
        self._contain(msg.job_id, popen.pid)
        log.info("step %d.%d task %d: pid %d on %s", msg.job_id, msg.step_id, task, popen.pid, msg.node)
        return Task(task=task, popen=popen, pty=master)

    def _contain(self, job_id: int, pid: int) -> None:
        """On the batch host, a task joins the job's cgroup: the job's memory limit holds it
        too (a task forked before the move is in its own session and follows it there)."""
        job = self.containment.jobs.get(job_id)
        if job is None or not job.cgroup or self.containment.cgroups is None:
            return
        try:
            self.containment.cgroups.move(job_id, [pid])
        except OSError as exc:
            log.warning("job %d: step task %d not moved into its cgroup (%s)", job_id, pid, exc)

    async def _pump(self, step: RunningStep, t: Task, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        streams = [
            (s, k) for s, k in ((t.popen.stdout, step_io.OUT), (t.popen.stderr, step_io.ERR)) if s is not None
        ]

        async def forward(stream: Any, kind: int) -> None:
            reader = asyncio.StreamReader(limit=READ_SIZE)
            transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
            try:
                while data := await reader.read(READ_SIZE):
                    writer.write(step_io.pack(kind, t.task, data))
                    await writer.drain()
            finally:
                transport.close()

        if t.pty is not None:
            await self._pump_terminal(t, writer)
        else:
            await asyncio.gather(*(forward(s, k) for s, k in streams), _exited(t.popen))
        t.end = _reap(t)
        status = t.popen.wait()
        t.exit_code, t.signal = (0, -status) if status < 0 else (status, 0)
        await self._task_epilog(step, t)  # as slurmstepd, before srun hears of the exit
        writer.write(step_io.pack_exit(t.task, t.exit_code, t.signal))
        await writer.drain()

    async def _pump_terminal(self, t: Task, writer: asyncio.StreamWriter) -> None:
        """Task 0's terminal to srun until the task has ended and the terminal is drained
        (its last holder gone: EIO), or a moment after the task's end when a process it left
        behind keeps the terminal open."""
        assert t.pty is not None
        loop = asyncio.get_running_loop()
        drained = loop.create_future()

        def readable() -> None:
            try:
                data = os.read(t.pty, READ_SIZE)  # type: ignore[arg-type]
            except BlockingIOError:
                return
            except OSError:  # EIO: no process holds the terminal any more
                data = b""
            if not data:
                loop.remove_reader(t.pty)  # type: ignore[arg-type]
                if not drained.done():
                    drained.set_result(None)
                return
            writer.write(step_io.pack(step_io.OUT, t.task, data))

        loop.add_reader(t.pty, readable)
        try:
            await _exited(t.popen)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(drained), TERMINAL_DRAIN)
            await writer.drain()
        finally:
            loop.remove_reader(t.pty)
            os.close(t.pty)
            t.pty = None

    async def _feed(self, step: RunningStep, reader: asyncio.StreamReader) -> None:
        """srun's standard input to each task of the node that reads it from srun (no -i)."""
        loop = asyncio.get_running_loop()
        pipes: list[asyncio.WriteTransport] = []
        for t in step.tasks:
            if t.popen.stdin is not None:
                transport, _ = await loop.connect_write_pipe(asyncio.Protocol, t.popen.stdin)
                pipes.append(transport)
        frames = step_io.FrameReader()
        try:
            while data := await reader.read(READ_SIZE):
                for kind, _task, payload in frames.feed(data):
                    if kind == step_io.WINCH:
                        self._winch(step, *step_io.unpack_winch(payload))
                        continue
                    if kind != step_io.IN:
                        raise step_io.FrameError(f"srun sent a frame of kind {kind}")
                    self._to_terminal(step, payload)
                    for pipe in pipes:
                        if payload and not pipe.is_closing():
                            pipe.write(payload)
                        elif not payload:
                            pipe.close()  # srun's input ended: the tasks read its end
        except (OSError, step_io.FrameError) as exc:
            log.warning("step %d.%d on %s: input from srun dropped (%s)",
                        step.msg.job_id, step.msg.step_id, step.msg.node, exc)  # fmt: skip
        finally:
            for pipe in pipes:
                pipe.close()

    @staticmethod
    def _to_terminal(step: RunningStep, payload: bytes) -> None:
        """srun's input typed at task 0's terminal; its end, an end-of-file character (the
        terminal stays: a hang-up would kill the task)."""
        for t in step.tasks:
            if t.pty is not None:
                with contextlib.suppress(OSError):
                    os.write(t.pty, payload or b"\x04")

    @staticmethod
    def _winch(step: RunningStep, rows: int, cols: int) -> None:
        for t in step.tasks:
            if t.pty is not None and rows and cols:
                with contextlib.suppress(OSError):
                    _resize(t.pty, rows, cols)

    def _release(self, job_id: int) -> None:
        """The job's CPU ids on nodes other than its batch host are freed with its last step."""
        if job_id in self.containment.jobs or any(k[0] == job_id for k in self.running):
            return
        self.containment.release(job_id)


async def _exited(popen: subprocess.Popen[bytes]) -> None:
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(popen.pid)
    except OSError:  # no pidfd: wait in a thread
        await loop.run_in_executor(None, popen.wait)
        return
    done = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)


_BIND_UNITS = {"cores": "-cores", "threads": "-threads", "sockets": "-sockets", "ldoms": "-ldoms"}


def binding_line(msg: am.StepLaunch, task: int, local: int, pid: int) -> str:
    """srun --cpu-bind=verbose: the task's binding in slurmstepd's words
    (task_slurm_chkaffinity), its mask read from the started process itself."""
    try:
        mask = sum(1 << cpu for cpu in os.sched_getaffinity(pid))
    except OSError:  # already gone: its mask went with it
        mask = 0
    if msg.cpu_bind == "none":
        units, kind, action = "", "NONE", ""
    else:
        units = _BIND_UNITS.get(msg.cpu_bind or "", "")
        kind, action = ("RANK" if msg.cpu_bind in ("rank", "rank_ldom") else "MASK"), " set"
    return (
        f"cpu-bind{units}={kind} - {msg.node}, task {task:2d} {local:2d} [{pid}]: mask 0x{mask:x}{action}\n"
    )


def _reap(t: Task) -> am.TaskEnd | None:
    """Reap the ended task with ``wait4`` for its rusage, as slurmstepd does: its CPU time
    counts to the end, where the samples of /proc stop up to a second short of it, and a
    step shorter than a sample has no other figures. None when it was reaped already."""
    if t.popen.returncode is not None:
        return None
    try:
        _pid, status, usage = os.wait4(t.popen.pid, 0)
    except ChildProcessError:
        return None
    t.popen.returncode = os.waitstatus_to_exitcode(status)
    # Linux counts a child's largest RSS from its fork, the agent's pages and all, until
    # its exec: a figure the agent itself has reached says nothing of the task's own.
    inherited = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return am.TaskEnd(
        task=t.task,
        user_cpu_secs=round(usage.ru_utime, 6),
        system_cpu_secs=round(usage.ru_stime, 6),
        max_rss_kb=int(usage.ru_maxrss) if usage.ru_maxrss > inherited else None,
        pages=int(usage.ru_majflt),
    )


def _signal_task(t: Task, sig: int) -> None:
    if t.popen.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(t.popen.pid, sig)
