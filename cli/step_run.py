"""One step of a running allocation, as srun runs it (docs/steps.md).

srun listens on a TCP port of the address it reaches the controller from, asks the
controller for the step (``POST /api/jobs/N/steps/``) with that address and a fresh key,
and each node's agent connects back for its tasks: their output and exits come straight
from the nodes, never through the controller. The controller is asked only to create,
cancel or signal the step, and now and then for its state (a node that could not start
its tasks reports there).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import termios
import threading
import time
import tty
from collections.abc import Mapping
from typing import Any

from cli import step_output
from cli.client import ApiError, CliError, split_url
from slurmwords import step_io
from slurmwords.step_ids import step_label

RETRY_EVERY = 1.0
POLL_EVERY = 2.0
# A node whose agent has not connected by then never will (it was not reachable when the
# controller sent the launch): the step is cancelled rather than left waiting forever.
LAUNCH_TIMEOUT = 60.0
SECOND_INTERRUPT = 1.0  # srun: one more Ctrl-C within a second aborts


def _opt(opts: Any, name: str, default: Any = None) -> Any:
    value = opts.get(name) if isinstance(opts, dict) else getattr(opts, name, None)
    return default if value is None else value


def exported_environment(opts: Any, environ: Mapping[str, str]) -> dict[str, str]:
    """The tasks' environment from srun's, by ``--export`` (else SRUN_EXPORT_ENV, else
    SLURM_EXPORT_ENV: a batch job's ``sbatch --export``), as srun's _build_user_env: the
    named variables (``A`` its value here, ``A=x`` that value) up to a ``NONE``, which ends
    the list; then every variable with ``ALL``, else only the ``SLURM*`` ones and SPANK's
    options. Without any, everything."""
    spec = _opt(opts, "export") or environ.get("SRUN_EXPORT_ENV") or environ.get("SLURM_EXPORT_ENV")
    if not spec:
        return dict(environ)
    out: dict[str, str] = {}
    every = False
    for word in str(spec).split(","):
        if word.upper() == "ALL":
            every = True
        if word.upper() == "NONE":
            break
        name, eq, value = word.partition("=")
        if eq:
            out[name] = value
        elif name in environ:
            out[name] = environ[name]
    for name, value in environ.items():
        if every or name.startswith(("SLURM", "_SLURM_SPANK_OPTION_")):
            out[name] = value  # the caller's value wins, as env_array_merge overwrites
    return out


def _min_nodes(text: Any) -> int | None:
    if text is None:
        return None
    first = str(text).split("-", 1)[0]
    if not first.isdigit() or int(first) < 1:
        raise CliError(f"Invalid node count specification: {text}")
    return int(first)


def listen_address(url: str) -> str:
    """The address this host reaches the controller from: the agents reach srun there."""
    _, host, port, _ = split_url(url)
    family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.connect(addr)  # a datagram socket's connect sends nothing
        return str(probe.getsockname()[0])


def stream_target(opts: Any, name: str) -> str | None:
    """An -o/-e/-i value as srun reads it (srun(1), "IO Redirection"): ``all`` is the
    default (to or from srun), ``none`` is /dev/null on the node, anything else a file name
    pattern; a single task's number (``-o 3``) fsched does not offer, and says so."""
    value = _opt(opts, name)
    if value is None or value == "all":
        return None
    if value == "none":
        return os.devnull
    if value.isdigit():
        raise CliError(f"--{name}={value}: redirecting one task's stream is not supported")
    return str(value)


def _env_count(environ: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def shape(opts: Any, environ: Mapping[str, str]) -> dict[str, int | None]:
    """The step's counts: the command line's, else srun's input environment variables, as
    Slurm's srun reads them (srun(1), "INPUT ENVIRONMENT VARIABLES"): inside a batch job
    ``srun hostname`` runs the job's SLURM_NTASKS tasks over its SLURM_NNODES nodes.
    Nodes inherited from the job never outnumber the tasks (Slurm sets nnodes to the
    task count then)."""
    ntasks = _opt(opts, "ntasks") or _env_count(environ, "SLURM_NTASKS", "SLURM_NPROCS")
    nodes = _min_nodes(_opt(opts, "nodes"))
    if nodes is None:
        nodes = _env_count(environ, "SLURM_NNODES")
        if nodes is not None and ntasks is not None:
            nodes = min(nodes, ntasks)
    per_node = _opt(opts, "ntasks_per_node")
    if per_node is None and _opt(opts, "ntasks") is None:
        per_node = _env_count(environ, "SLURM_NTASKS_PER_NODE")
    cpus = _opt(opts, "cpus_per_task") or _env_count(environ, "SRUN_CPUS_PER_TASK")
    return {"ntasks": ntasks, "nodes": nodes, "ntasks_per_node": per_node, "cpus_per_task": cpus}


def terminal(opts: Any) -> int | None:
    """srun --pty[=fd]: the terminal task 0's pseudo-terminal stands for (standard input,
    or the fd given), or None, with srun's error, when that is not a terminal."""
    pty = _opt(opts, "pty")
    if pty is None:
        return None
    fd = int(pty) if pty else 0
    if not os.isatty(fd):
        _err(f"srun: error: Not using a pseudo-terminal, disregarding --pty{'=' if pty else ''}{pty} option")
        return None
    return fd


def step_request(
    opts: Any,
    command: list[str],
    host: str,
    port: int,
    key: str,
    *,
    pty_fd: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The step as srun asks for it; ``environ``: srun's environment (its process's when
    None: salloc's interactive step passes the allocation's, srun running in salloc)."""
    environ = os.environ if environ is None else environ
    environment = exported_environment(opts, environ)
    size = {}
    if pty_fd is not None:
        cols, rows = os.get_terminal_size(pty_fd)
        size = {"pty": True, "pty_rows": rows or None, "pty_cols": cols or None}
        # setup_env's, from srun's terminal: the task's programs read them for its size.
        environment.update(SLURM_PTY_WIN_ROW=str(rows), SLURM_PTY_WIN_COL=str(cols))
    return {
        **size,
        **shape(opts, environ),
        "overlap": bool(_opt(opts, "overlap", False)),
        "interactive": bool(_opt(opts, "interactive", False)),
        "preserve_env": bool(_opt(opts, "preserve_env", False)),
        "argv": list(command),
        # srun --multi-prog: each task's own (cli/multi_prog.py), by task id.
        **({"task_argv": task_argv} if (task_argv := _opt(opts, "task_argv")) else {}),
        **(_opt(opts, "cpu_binding") or {}),
        "environment": environment,
        "work_dir": os.path.abspath(_opt(opts, "chdir") or os.getcwd()),
        "name": _opt(opts, "job_name"),
        "std_out": stream_target(opts, "output"),
        "std_err": stream_target(opts, "error"),
        "std_in": stream_target(opts, "input"),
        "io_host": host,
        "io_port": port,
        "io_key": key,
    }


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def create(
    client: Any, job_id: int, body: dict[str, Any], interrupts: list[float] | None = None
) -> dict[str, Any]:
    """POST the step, waiting as srun does while the job's other steps hold its CPUs; two
    Ctrl-C within a second meanwhile give up (``interrupts``: their times)."""
    waited = False
    interrupts = [] if interrupts is None else interrupts
    while True:
        if len(interrupts) >= 2 and interrupts[-1] - interrupts[-2] <= SECOND_INTERRUPT:
            raise KeyboardInterrupt
        try:
            step = client.post(f"/api/jobs/{job_id}/steps/", body)
        except ApiError as exc:
            if exc.status != 409:
                raise CliError(f"Unable to create step for job {job_id}: {exc}") from None
            if not waited and exc.message == "Requested nodes are busy":
                why = "step creation temporarily disabled, retrying (Requested nodes are busy)"
                _err(f"srun: Job {job_id} {why}")
                waited = True
            time.sleep(RETRY_EVERY)
            continue
        if waited:
            _err(f"srun: Step created for StepId={job_id}.{step_label(step['step_id'])}")
        assert isinstance(step, dict)
        return step


def run_step(
    client: Any, job_id: int, opts: Any, command: list[str], environ: Mapping[str, str] | None = None
) -> int:
    """Run ``command`` as a new step of RUNNING job ``job_id``; srun's exit status.
    ``environ``: srun's environment, when it is not this process's (step_request)."""
    mpi = _opt(opts, "mpi", "none")
    if mpi not in ("none", "list"):
        # Slurm's words when the MPI plugin is not installed: fsched provides no PMIx.
        _err(f"srun: error: Couldn't find the specified plugin name for mpi/{mpi} looking at all files")
        _err(f"srun: error: invalid MPI type '{mpi}', --mpi=list for acceptable types")
        return 1
    if mpi == "list":
        sys.stdout.write("MPI plugin types are...\n\tnone\n")
        return 0
    if not command:
        _err("srun: fatal: No command given to execute.")
        return 1
    host = listen_address(client.url)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.bind((host, 0))
    sock.listen(1024)  # the agents may connect as soon as the step is committed
    key = step_io.new_key()
    try:
        # From here on Ctrl-C is srun's (below, once the step exists): one arriving before is
        # kept and heard then, rather than killing srun with the step just created.
        interrupts: list[float] = []
        previous = signal.signal(signal.SIGINT, lambda *_: interrupts.append(time.monotonic()))
        pty_fd = terminal(opts)
        try:
            port = sock.getsockname()[1]
            body = step_request(opts, command, host, port, key, pty_fd=pty_fd, environ=environ)
            step = create(client, job_id, body, interrupts)
        except CliError as exc:
            _err(f"srun: error: {exc}")
            return 1
        finally:
            signal.signal(signal.SIGINT, previous)
        session = Session(client, job_id, step, key, opts, pty_fd=pty_fd)
        return asyncio.run(session.run(sock, interrupts))
    finally:
        sock.close()


class Session:
    """The running step as srun sees it: the nodes' connections, the output, the exits."""

    def __init__(
        self,
        client: Any,
        job_id: int,
        step: dict[str, Any],
        key: str,
        opts: Any,
        *,
        pty_fd: int | None = None,
    ) -> None:
        self.client = client
        # srun --pty: the local terminal, raw while the step runs (its keys, Ctrl-C too, go
        # to task 0's terminal), and read for the input.
        self.tty = pty_fd
        self.input_fd = 0 if pty_fd is None else pty_fd
        self.job_id = job_id
        self.step_id = int(step["step_id"])
        # The name both sides prove the step's key with (the agent's, by number), and the
        # one srun's lines write (N.interactive for the interactive step).
        self.key_name = f"{job_id}.{self.step_id}"
        self.name = f"{job_id}.{step_label(self.step_id)}"
        self.ntasks = int(step["num_tasks"])
        self.nodes = {n["name"]: list(n["tasks"]) for n in step["nodes"]}
        self.key = key
        # -K alone is -K1; -K0 turns it off (srun's --kill-on-bad-exit[=0|1]).
        self.kill_on_bad_exit = str(_opt(opts, "kill_on_bad_exit", "0")) not in ("0", "False", "")
        self.max_wait = int(_opt(opts, "max_wait", 0) or 0)  # srun -W: 0 waits for every task
        self.quit_on_interrupt = bool(_opt(opts, "quit_on_interrupt", False))
        self.disable_status = bool(_opt(opts, "disable_status", False))
        self.out = step_output.TaskOutput(
            sys.stdout.buffer, sys.stderr.buffer, ntasks=self.ntasks, label=bool(_opt(opts, "label", False))
        )
        self.exits: dict[int, tuple[int, int]] = {}
        self.by_node: dict[str, dict[int, tuple[int, int]]] = {}
        self.open = 0
        self.connected: set[str] = set()
        self.done = asyncio.Event()
        self.last_interrupt = 0.0
        self.aborted = False
        self.terminated = False
        self.ended_state: str | None = None
        self.error = ""
        # srun's --input=all (the default): its standard input goes to every task.
        self.forward_input = stream_target(opts, "input") is None
        self.input: list[bytes] = []  # what srun has read so far: a late node gets it all
        self.input_done = False
        self.writers: list[asyncio.StreamWriter] = []
        self._api = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()  # kept until srun ends

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        async with self._api:  # one HTTP connection: one request at a time
            loop = asyncio.get_running_loop()
            if method == "get":
                return await loop.run_in_executor(None, self.client.get, path)
            return await loop.run_in_executor(None, self.client.post, path, body)

    async def run(self, sock: socket.socket, interrupts: list[float] | None = None) -> int:
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(self._serve, sock=sock)
        saved = self._raw()
        if self.forward_input:
            threading.Thread(target=self._read_input, args=(loop,), daemon=True).start()
        loop.add_signal_handler(signal.SIGINT, self._interrupt)
        if self.tty is not None:
            loop.add_signal_handler(signal.SIGWINCH, self._winch)
        for when in interrupts or ():  # those that came while the step was being created
            self._interrupt(when)
        poller = asyncio.create_task(self._poll())
        try:
            await self.done.wait()
            # A cancel or signal asked for (Ctrl-C, -K) reaches the controller before srun
            # ends, even when the tasks ended first: the step must show it.
            if self._tasks:
                await asyncio.wait(self._tasks, timeout=30)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            if self.tty is not None:
                loop.remove_signal_handler(signal.SIGWINCH)
            if saved is not None:
                termios.tcsetattr(self.tty, termios.TCSANOW, saved)  # srun's _pty_restore
            poller.cancel()
            server.close()
        for line in step_output.exit_report(self.by_node):
            _err(line)
        if self.error and len(self.exits) < self.ntasks:
            _err(f"srun: error: {self.error}")
        missing = [(1, 0)] * (self.ntasks - len(self.exits))
        return step_output.exit_status([*self.exits.values(), *missing])

    def _raw(self) -> list[Any] | None:
        """The local terminal in raw mode (cfmakeraw, as srun sets it); its settings before."""
        if self.tty is None:
            return None
        try:
            saved = termios.tcgetattr(self.tty)
            tty.setraw(self.tty, termios.TCSANOW)
        except termios.error:
            return None
        return saved

    def _winch(self) -> None:
        """The local terminal was resized: task 0's follows."""
        assert self.tty is not None
        cols, rows = os.get_terminal_size(self.tty)
        frame = step_io.pack_winch(rows, cols)
        for writer in self.writers:
            if not writer.is_closing():
                writer.write(frame)

    def _read_input(self, loop: asyncio.AbstractEventLoop) -> None:
        """srun's standard input, read in a thread (a terminal or a file alike), handed to
        the loop chunk by chunk; an empty chunk is its end."""
        while True:
            try:
                chunk = os.read(self.input_fd, step_io.MAX_PAYLOAD)
            except OSError:  # no standard input at all
                chunk = b""
            try:
                loop.call_soon_threadsafe(self._input, chunk)
            except RuntimeError:  # srun is ending: its loop is closed
                return
            if not chunk:
                return

    def _input(self, chunk: bytes) -> None:
        if chunk:
            self.input.append(chunk)
        self.input_done = not chunk
        frame = step_io.pack(step_io.IN, step_io.NO_TASK, chunk)
        for writer in self.writers:
            if not writer.is_closing():
                writer.write(frame)

    def _check_done(self) -> None:
        if len(self.exits) >= self.ntasks and self.open == 0:
            self.done.set()

    async def _poll(self) -> None:
        """The step's state now and then: a node that never connected reports there."""
        started = time.monotonic()
        while True:
            await asyncio.sleep(POLL_EVERY)
            missing = sorted(set(self.nodes) - self.connected)
            if missing and time.monotonic() - started > LAUNCH_TIMEOUT:
                for node in missing:
                    _err(f"srun: error: Task launch for StepId={self.name} failed on node {node}: "
                         "its agent did not answer")  # fmt: skip
                await self._cancel()
                self.done.set()
                return
            try:
                step = await self._call("get", f"/api/jobs/{self.job_id}/steps/{self.step_id}/")
            except CliError:
                continue
            if step.get("state") != "RUNNING":
                self.ended_state, self.error = step.get("state"), step.get("error") or ""
                # Give the connections still open a moment to deliver their last frames.
                await asyncio.sleep(POLL_EVERY if self.open else 0)
                self.done.set()
                return

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = step_io.FrameReader()
        node = ""
        self.open += 1
        try:
            node = await self._handshake(reader, writer, frames)
            self.connected.add(node)
            if self.forward_input:
                for chunk in [*self.input, *([b""] if self.input_done else [])]:
                    writer.write(step_io.pack(step_io.IN, step_io.NO_TASK, chunk))
                self.writers.append(writer)
            while data := await reader.read(1 << 16):
                for kind, task, payload in frames.feed(data):
                    self._frame(node, kind, task, payload)
        except (OSError, step_io.FrameError, asyncio.IncompleteReadError, EOFError) as exc:
            if node:
                _err(f"srun: error: {node}: connection lost: {exc}")
        finally:
            self.open -= 1
            writer.close()
            self._check_done()

    async def _handshake(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, frames: step_io.FrameReader
    ) -> str:
        got: list[tuple[int, int, bytes]] = []
        while not got:
            data = await asyncio.wait_for(reader.read(1 << 16), 10)
            if not data:
                raise EOFError("closed during the handshake")
            got = frames.feed(data)
        kind, _, payload = got[0]
        hello = step_io.unpack_json(payload)
        node, theirs = hello.get("node"), hello.get("nonce")
        if kind != step_io.HELLO or node not in self.nodes or not isinstance(theirs, str):
            raise step_io.FrameError("not a node of this step")
        ours = step_io.new_nonce()
        proof = step_io.srun_proof(self.key, theirs, ours, self.key_name, str(node))
        writer.write(step_io.pack_json(step_io.CHALLENGE, {"nonce": ours, "proof": proof}))
        await writer.drain()
        while len(got) < 2:
            data = await asyncio.wait_for(reader.read(1 << 16), 10)
            if not data:
                raise EOFError("closed during the handshake")
            got += frames.feed(data)
        kind, _, payload = got[1]
        expected = step_io.task_proof(self.key, ours, theirs, self.key_name, str(node))
        if kind != step_io.AUTH or not step_io.proven(expected, step_io.unpack_json(payload).get("proof")):
            raise step_io.FrameError(f"{node} failed to prove the step's key")
        for kind, task, payload in got[2:]:
            self._frame(str(node), kind, task, payload)
        return str(node)

    def _frame(self, node: str, kind: int, task: int, payload: bytes) -> None:
        if task not in self.nodes.get(node, ()):
            raise step_io.FrameError(f"{node} sent a frame for task {task}, not one of its tasks")
        if kind in (step_io.OUT, step_io.ERR):
            self.out.write(task, payload, err=kind == step_io.ERR)
        elif kind == step_io.EXIT:
            status = step_io.unpack_exit(payload)
            self.out.task_ended(task)
            self.exits[task] = status
            self.by_node.setdefault(node, {})[task] = status
            if status != (0, 0) and self.kill_on_bad_exit and not self.terminated:
                self.terminated = True
                _err(f"srun: Terminating StepId={self.name}")
                self._tasks.add(asyncio.get_running_loop().create_task(self._signal("KILL")))
            if len(self.exits) == 1 and self.max_wait > 0 and len(self.exits) < self.ntasks:
                asyncio.get_running_loop().call_later(self.max_wait, self._max_wait_over)
            self._check_done()

    def _max_wait_over(self) -> None:
        """srun -W: the first task ended --wait seconds ago; the others are killed, as
        srun's SIGALRM handler says and does."""
        if len(self.exits) >= self.ntasks or self.terminated:
            return
        self.terminated = True
        _err(f"srun: First task exited {self.max_wait}s ago")
        for line in step_output.status_lines(self.name, self.ntasks, self.exits):
            _err(line)
        self._tasks.add(asyncio.get_running_loop().create_task(self._signal("KILL")))

    async def _signal(self, name: str) -> None:
        with contextlib.suppress(CliError):
            await self._call(
                "post", f"/api/jobs/{self.job_id}/steps/{self.step_id}/signal/", {"signal": name}
            )

    async def _cancel(self, first: str | None = None) -> None:
        body = {"signal": first} if first else {}
        with contextlib.suppress(CliError):
            await self._call("post", f"/api/jobs/{self.job_id}/steps/{self.step_id}/cancel/", body)

    def _interrupt(self, now: float | None = None) -> None:
        """srun's Ctrl-C: the first prints the tasks' states, a second within a second
        forwards SIGINT to the tasks and cancels the step (-q: the first does; -X: each
        forwards SIGINT alone, two within a second abort)."""
        now = time.monotonic() if now is None else now
        loop = asyncio.get_running_loop()
        if now - self.last_interrupt > SECOND_INTERRUPT and not self.quit_on_interrupt:
            self.last_interrupt = now
            if self.disable_status:  # srun -X: the Ctrl-C goes to the tasks, nothing ends
                _err(f"srun: sending Ctrl-C to StepId={self.name}")
                self._tasks.add(loop.create_task(self._signal("INT")))
                return
            words = "abort already in progress" if self.aborted else "one more within 1 sec to abort"
            _err(f"srun: interrupt ({words})")
            for line in step_output.status_lines(self.name, self.ntasks, self.exits):
                _err(line)
            return
        if self.aborted:
            return
        self.aborted = True
        _err(f"srun: sending Ctrl-C to StepId={self.name}")
        _err("srun: forcing job termination")

        # One request: the step is CANCELLED before its tasks can end of the SIGINT alone.
        self._tasks.add(loop.create_task(self._cancel("INT")))
