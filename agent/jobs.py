"""Launching and supervising batch jobs on the node (Linux).

Each job runs as ``/bin/bash -c WRAPPER fsched-job <status_file> <script>``, in its own
session and process group (the wrapper is the leader; its pid is the job's pid). The
wrapper is a constant string, never built from user data. It runs the script as a
foreground child, so a trapped signal is handled only once the script has ended, and
writes the script's shell status (``$?``) to the status file. Its traps have a handler
(``:``), not ``''``, because an ignored signal would be inherited as ignored by the
script, while a handled one is reset to the default in the child. Because the status
lands in the spool, a job that ends while the agent is down (stopped, crashed,
``kill -9``) still gets its true exit status reported after the agent restarts. The
status is one ``write`` of ``N\\n``, read only after the wrapper is gone; a partial file
counts as missing, which is why no temporary file and rename (one more process per
job) are needed.

A signal sent to the group in the instant after the wrapper forks the script, before
the child has reset the wrapper's handlers and exec'd, would be swallowed; the wrapper
re-raises signals that arrive before it forks, and the agent holds back catchable
signals until the script runs (``script_running``: a child of the wrapper named after
the script file), so a scancel a millisecond after the start still reaches the script.

Why bash and not dash, which starts a millisecond faster: dash leaves a window of a
few milliseconds after its ``trap`` in which a signal sent to the group (a scancel
right after the start) is swallowed before the script exists; bash's is too narrow to
hit. Bash also prints no "Terminated" notice once its stderr is /dev/null, while the
script keeps the job's stderr on fd 3.

The shell status cannot tell ``exit 143`` from "killed by SIGTERM"; like the shell we
read 129..128+SIGRTMAX as "killed by signal status-128" (that is what a scancel'ed
script shows). A wrapper killed itself (SIGKILL reaches the whole group) leaves no
status: its own wait status gives the signal. A job whose wrapper vanished while the
agent was down without writing a status is reported as ``exit_code 0, signal 9``.

Accounts: when the agent runs as root and the job's user is not root, the job runs
as the Unix account of that name (uid, gid, supplementary groups, HOME/USER/LOGNAME
from the passwd entry) and its output files are opened with that account's
permissions. An agent that is not root runs every job as itself, whatever the user.

When the wrapper ends, leftovers of the job's process group are killed (Slurm kills
what a batch script leaves behind). Exits are noticed with a pidfd in the event loop
(no thread, no polling); adopted jobs of a previous agent are watched the same way,
with a 0.5 s poll as the fallback.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import pwd
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent import paths
from agent.spool import SCRIPT_NAME, Completion, JobState, Spool

FLUSH_WINDOW = 0.01  # seconds
log = logging.getLogger(__name__)

BASH = "/bin/bash"
# Signals a scancel --signal may send: the wrapper must survive them to record the
# script's status. KILL and STOP cannot be caught (and need not be).
_TRAPPED = (
    "HUP INT QUIT ILL TRAP ABRT BUS FPE USR1 SEGV USR2 PIPE ALRM TERM STKFLT XCPU XFSZ VTALRM PROF IO PWR SYS"
)
# A signal that arrives before the script exists would be swallowed by the trap while the
# script, started a moment later, never sees it: until then (c unset) each handler
# re-raises its signal at the wrapper with the default action, so the job dies of it.
_HANDLERS = "\n".join(
    f"trap '[ -n \"$c\" ] || {{ trap - {s}; kill -{s} $$; }}' {s}" for s in _TRAPPED.split()
)
# fd 3 keeps the job's stderr; the wrapper's own stderr goes to /dev/null so that bash's
# "Terminated" notices never land in the job's error file.
WRAPPER = f"""exec 3>&2 2>/dev/null
{_HANDLERS}
c=1
"$2" 2>&3 3>&-
r=$?
printf '%s\\n' "$r" >"$1"
"""
WRAPPER_NAME = "fsched-job"
LOST_SIGNAL = int(signal.SIGKILL)
# Signals that cannot be swallowed by a handler go out at once; others wait for the script.
_UNCATCHABLE = frozenset({signal.SIGKILL, signal.SIGSTOP, signal.SIGCONT})
SETTLE_POLL = 0.005  # seconds between checks that the script runs
SETTLE_MAX = 1.0  # then send anyway: a script without #! never shows its name
_MAX_SIGNAL = int(signal.SIGRTMAX)


class LaunchError(Exception):
    """A job that cannot be started; the message goes to the controller as is."""


def decode_status(status: int) -> tuple[int, int]:
    """(exit_code, signal) from a shell status ``$?``."""
    if 128 < status <= 128 + _MAX_SIGNAL:
        return 0, status - 128
    return status & 0xFF, 0


def parse_signal(name: str | int) -> signal.Signals:
    """``"USR1"``, ``"SIGUSR1"``, ``10`` or ``"10"`` → signal.SIGUSR1."""
    text = str(name).strip().upper()
    if text.isdigit():
        return signal.Signals(int(text))
    if not text.startswith("SIG"):
        text = "SIG" + text
    try:
        return signal.Signals[text]
    except KeyError:
        raise ValueError(f"invalid signal {name!r}") from None


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def boot_ticks() -> int:
    """Now, in the clock ticks since boot that /proc uses for process start times."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLOCK_TICKS)


def start_ticks(pid: int) -> int | None:
    """Start time of a live (non-zombie) process in clock ticks since boot, else None.

    Start ticks never change for a process, unlike wall-clock create times derived from
    an adjustable boot time, so (pid, start_ticks) names one process for good.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rfind(b")") + 2 :].split()
    # rest[0] is field 3 (state); field 22 (starttime) is rest[19].
    if not rest or rest[0] in (b"Z", b"X"):
        return None
    return int(rest[19])


def script_running(wrapper_pid: int) -> bool:
    """Whether the wrapper's child has become the script (or we cannot tell).

    A child still running the wrapper's code would swallow a caught signal; once it has
    exec'd the script, its name (``comm``) is the script file's name.
    """
    try:
        with open(f"/proc/{wrapper_pid}/task/{wrapper_pid}/children") as f:
            children = f.read().split()
    except OSError:  # no such process (nothing to protect) or no children file
        return True
    for child in children:
        try:
            with open(f"/proc/{child}/comm") as f:
                if f.read().strip() == SCRIPT_NAME:
                    return True
        except OSError:
            continue
    return False


@dataclass(frozen=True)
class Account:
    """Who a job runs as; None fields mean "as the agent itself"."""

    name: str
    home: str | None = None
    uid: int | None = None
    gid: int | None = None
    groups: tuple[int, ...] = ()

    @property
    def switches(self) -> bool:
        return self.uid is not None


def resolve_account(user: str) -> Account:
    """The account a job of ``user`` runs as on this node (see the module docstring)."""
    if os.geteuid() != 0:
        return Account(name=user)
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        raise LaunchError(f"user {user} does not exist on this node") from None
    if pw.pw_uid == 0:
        return Account(name=pw.pw_name, home=pw.pw_dir)
    groups = tuple(os.getgrouplist(pw.pw_name, pw.pw_gid))
    return Account(name=pw.pw_name, home=pw.pw_dir, uid=pw.pw_uid, gid=pw.pw_gid, groups=groups)


@contextlib.contextmanager
def effective(account: Account):  # type: ignore[no-untyped-def]
    """Take the job account's effective ids for file access, as slurmstepd does."""
    if not account.switches:
        yield
        return
    saved = os.getgroups()
    os.setgroups(list(account.groups))
    os.setegid(account.gid)  # type: ignore[arg-type]
    os.seteuid(account.uid)  # type: ignore[arg-type]
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(saved)


def job_environment(job: Mapping[str, Any], account: Account) -> dict[str, str]:
    """The submitter's environment plus the SLURM_* variables of docs/agent-protocol.md."""
    env = {str(k): str(v) for k, v in (job.get("environment") or {}).items()}
    if account.home is not None:
        env.update(HOME=account.home, USER=account.name, LOGNAME=account.name)
    host = str(job.get("batch_host") or "")
    node_list = str(job.get("node_list") or host)
    num_nodes = str(job.get("num_nodes") or 1)
    values = {
        "SLURM_JOB_ID": str(job["job_id"]),
        "SLURM_JOBID": str(job["job_id"]),
        "SLURM_JOB_NAME": str(job.get("name") or ""),
        "SLURM_JOB_NODELIST": node_list,
        "SLURM_NODELIST": node_list,
        "SLURM_JOB_NUM_NODES": num_nodes,
        "SLURM_NNODES": num_nodes,
        "SLURM_CPUS_ON_NODE": str(job.get("cpus_on_node") or 1),
        "SLURM_SUBMIT_DIR": str(job.get("work_dir") or ""),
        "SLURM_JOB_PARTITION": str(job.get("partition") or ""),
        "SLURM_JOB_ACCOUNT": str(job.get("account") or ""),
        "SLURM_JOB_QOS": str(job.get("qos") or ""),
        "SLURM_JOB_USER": str(job.get("user") or ""),
        "SLURMD_NODENAME": host,
    }
    env.update(values)
    # A job submitted from inside an array task must not inherit its array identity.
    env.pop("SLURM_ARRAY_JOB_ID", None)
    env.pop("SLURM_ARRAY_TASK_ID", None)
    if job.get("array_task_id") is not None:
        env["SLURM_ARRAY_JOB_ID"] = str(job.get("array_job_id") or job["job_id"])
        env["SLURM_ARRAY_TASK_ID"] = str(job["array_task_id"])
    return env


def _check_work_dir(work_dir: str) -> None:
    """Raise LaunchError with Slurm's wording unless the job could chdir there."""
    try:
        st = os.stat(work_dir)
    except OSError as exc:
        raise LaunchError(f"chdir to {work_dir} failed: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise LaunchError(f"chdir to {work_dir} failed: {os.strerror(errno.ENOTDIR)}")
    if not os.access(work_dir, os.X_OK, effective_ids=True):
        raise LaunchError(f"chdir to {work_dir} failed: {os.strerror(errno.EACCES)}")


def _open(path: str, flags: int, what: str) -> int:
    try:
        return os.open(path, flags | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise LaunchError(f"could not open {what} file {path}: {exc.strerror}") from None


@dataclass(eq=False)
class Job:
    """A job whose process group leader (the wrapper) is alive, as far as we know."""

    state: JobState
    popen: subprocess.Popen[bytes] | None  # None: adopted from a previous agent
    silent: bool = False  # killed at the controller's request: report nothing
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    pidfd: int | None = None


Emit = Callable[[dict[str, Any]], None]


class JobManager:
    """The jobs of one agent: launch, watch, signal, complete, acknowledge.

    ``emit`` receives each message for the controller (``started``, ``launch_failed``,
    ``completed``); it must not block. Methods are called from the event loop thread.
    """

    def __init__(
        self,
        spool: Spool,
        nodes: Sequence[str],
        emit: Emit,
        *,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.5,
    ) -> None:
        self.spool = spool
        self.nodes = frozenset(nodes)
        self.emit = emit
        self.clock = clock
        self.poll_interval = poll_interval
        # The agent's health: None while the spool is usable, else why not (the daemon
        # drains the hosted nodes with this reason after each registration).
        self.problem: str | None = None
        self._running: dict[int, Job] = {}
        self._pending: dict[int, tuple[Job, Completion]] = {}  # ended, not yet spooled
        self._done: dict[int, Completion] = {}  # spooled, not yet acknowledged
        # Launches of a later run waiting for the earlier run's processes to be reaped, so
        # the two never share the job's spool directory.
        self._deferred: dict[int, Mapping[str, Any]] = {}
        self._seq = 0
        self._flush_scheduled = False

    # -- views for register ---------------------------------------------------------

    def running(self) -> list[dict[str, Any]]:
        return [
            {"job_id": j.state.job_id, "node": j.state.node, "pid": j.state.pid, "run": j.state.run}
            for j in self._running.values()
            if not j.silent
        ]

    def completions(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self._done.values()]

    def is_reportable(self, job_id: int) -> bool:
        """Whether a queued ``completed`` for this job should still be sent."""
        return job_id in self._done

    # -- start-up -------------------------------------------------------------------

    def recover(self) -> int:
        """Load the spool: adopt live jobs, complete the ones that ended meanwhile.

        Must run inside the event loop. Returns the number of adopted (live) jobs.
        """
        self._done = self.spool.completions()
        self._seq = max((c.seq for c in self._done.values()), default=0)
        adopted = 0
        for st in self.spool.states():
            if st.job_id in self._done:
                continue  # ended earlier, waiting for its ack
            job = Job(state=st, popen=None)
            if st.is_process(start_ticks(st.pid)):
                log.info("job %d: adopted running process %d on %s", st.job_id, st.pid, st.node)
                self._running[st.job_id] = job
                self._watch(job)
                adopted += 1
            else:
                # Its pid may belong to someone else by now: no clean-up kill.
                self._ended(job, cleanup=False)
        self.flush()
        return adopted

    # -- controller requests --------------------------------------------------------

    def launch(self, job: Mapping[str, Any]) -> None:
        job_id = int(job["job_id"])
        node = str(job.get("batch_host") or "")
        run = int(job.get("run") or 0)
        # A launch of a later run (the job was requeued) replaces whatever is left of the
        # earlier one: that run's end is no longer the controller's business.
        stale_running = job_id in self._running and self._running[job_id].state.run != run
        stale_done = job_id in self._done and self._done[job_id].run != run
        if stale_running or stale_done:
            log.info("job %d: launch of run %d replaces an earlier run", job_id, run)
            self.kill_silently([job_id])
            if stale_running:
                self._deferred[job_id] = job  # started once the earlier run is reaped (flush)
                return
        if job_id in self._running:
            st = self._running[job_id].state
            log.info("job %d: launch repeated, already running", job_id)
            self.emit({"type": "started", "job_id": job_id, "node": st.node, "pid": st.pid,
                       "time": st.started, "run": st.run})  # fmt: skip
            return
        if job_id in self._pending or job_id in self._done:
            log.info("job %d: launch repeated, already completed", job_id)
            if job_id in self._done:
                self.emit({"type": "completed", **self._done[job_id].to_dict()})
            return
        try:
            if node not in self.nodes:
                raise LaunchError(f"node {node} is not served by this agent")
            self._start(job_id, node, job)
        except LaunchError as exc:
            self.spool.remove_job(job_id)
            log.warning("job %d: launch failed on %s: %s", job_id, node, exc)
            self.emit({"type": "launch_failed", "job_id": job_id, "node": node, "error": str(exc),
                       "time": self.clock(), "run": run})  # fmt: skip

    def _start(self, job_id: int, node: str, job: Mapping[str, Any]) -> None:
        account = resolve_account(str(job.get("user") or ""))
        env = job_environment(job, account)
        files = paths.job_files(job)
        work_dir = str(job.get("work_dir") or "/")
        fds: list[int] = []
        try:
            with effective(account):
                _check_work_dir(work_dir)
                out = _open(files.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "stdout")
                fds.append(out)
                err = out
                if files.stderr is not None:
                    err = _open(files.stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "stderr")
                    fds.append(err)
                stdin: int = subprocess.DEVNULL
                if files.stdin is not None:
                    stdin = _open(files.stdin, os.O_RDONLY, "stdin")
                    fds.append(stdin)
            owner = (account.uid, account.gid) if account.switches else None
            script_path, status_path = self.spool.prepare_job(
                job_id,
                str(job.get("script") or ""),
                owner,  # type: ignore[arg-type]
            )
            ids: dict[str, Any] = {}
            if account.switches:
                ids = {"user": account.uid, "group": account.gid, "extra_groups": list(account.groups)}
            ticks_before = boot_ticks()
            try:
                popen = subprocess.Popen(
                    [BASH, "-c", WRAPPER, WRAPPER_NAME, status_path, script_path],
                    stdin=stdin,
                    stdout=out,
                    stderr=err,
                    cwd=work_dir,
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                    **ids,
                )
            except OSError as exc:
                if exc.filename == work_dir:
                    raise LaunchError(f"chdir to {work_dir} failed: {exc.strerror}") from None
                raise LaunchError(f"cannot start job: {exc}") from None
            except ValueError as exc:  # e.g. a NUL byte in the environment
                raise LaunchError(f"cannot start job: {exc}") from None
        finally:
            for fd in fds:
                os.close(fd)
        now = self.clock()
        state = JobState(
            job_id=job_id,
            node=node,
            pid=popen.pid,
            pgid=popen.pid,
            started=now,
            start_ticks=ticks_before,
            start_ticks_max=boot_ticks(),
            status_file=status_path,
            run=int(job.get("run") or 0),
        )
        self.spool.write_state(state)
        j = Job(state=state, popen=popen)
        self._running[job_id] = j
        self._watch(j)
        log.info("job %d: started on %s as pid %d (user %s)", job_id, node, popen.pid, account.name)
        self.emit({"type": "started", "job_id": job_id, "node": node, "pid": popen.pid, "time": now,
                   "run": state.run})  # fmt: skip

    def signal(self, job_id: int, name: str | int) -> None:
        job = self._running.get(job_id)
        if job is None:
            log.info("job %d: signal %s for a job not running here, ignored", job_id, name)
            return
        try:
            sig = parse_signal(name)
        except ValueError as exc:
            log.warning("job %d: %s", job_id, exc)
            return
        log.info("job %d: sending %s to process group %d", job_id, sig.name, job.state.pgid)
        self._send(job, (sig,))

    def cancel(self, job_id: int, kill_wait: float) -> None:
        """TERM the job's process group, KILL it after ``kill_wait`` if it still lives."""
        job = self._running.get(job_id)
        if job is None:
            log.info("job %d: cancel for a job not running here, ignored", job_id)
            return
        log.info("job %d: cancelled, SIGTERM now, SIGKILL in %gs", job_id, kill_wait)
        self._send(job, (signal.SIGTERM, signal.SIGCONT))  # a stopped job must wake up to die
        loop = asyncio.get_running_loop()
        job.timers.append(loop.call_later(max(0.0, kill_wait), self._kill_if_running, job))

    def _kill_if_running(self, job: Job) -> None:
        if self._running.get(job.state.job_id) is job:
            log.info("job %d: still alive after kill wait, SIGKILL", job.state.job_id)
            self._killpg(job, signal.SIGKILL)

    def kill_silently(self, job_ids: Iterable[int]) -> None:
        """``registered.kill``: KILL the jobs and forget them without a completion."""
        for job_id in job_ids:
            job = self._running.get(job_id)
            if job is not None:
                log.info("job %d: killed at the controller's request, no completion", job_id)
                job.silent = True
                self._killpg(job, signal.SIGKILL)
            elif job_id in self._pending:
                self._pending[job_id][0].silent = True
            else:
                self._done.pop(job_id, None)
                self.spool.remove_job(job_id)

    def ack(self, job_ids: Iterable[int]) -> None:
        for job_id in job_ids:
            if job_id in self._running or job_id in self._pending:
                log.warning("job %d: ack for a job that has not completed, ignored", job_id)
                continue
            self._done.pop(job_id, None)
            self.spool.remove_job(job_id)
            log.debug("job %d: completion acknowledged", job_id)

    # -- supervision ----------------------------------------------------------------

    def _send(self, job: Job, sigs: tuple[signal.Signals, ...], waited: float = 0.0) -> None:
        """Signal the job's process group, once the script can receive the signals."""
        if self._running.get(job.state.job_id) is not job:
            return  # ended meanwhile
        if sigs[0] not in _UNCATCHABLE and waited < SETTLE_MAX and not script_running(job.state.pid):
            loop = asyncio.get_running_loop()
            loop.call_later(SETTLE_POLL, self._send, job, sigs, waited + SETTLE_POLL)
            return
        for sig in sigs:
            self._killpg(job, sig)

    @staticmethod
    def _killpg(job: Job, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.state.pgid, sig)

    def _watch(self, job: Job) -> None:
        loop = asyncio.get_running_loop()
        try:
            fd = os.pidfd_open(job.state.pid)
        except ProcessLookupError:
            self._ended(job)
            return
        except OSError as exc:  # no pidfd support, or out of descriptors
            log.debug("job %d: pidfd unavailable (%s), polling", job.state.job_id, exc)
            loop.call_later(self.poll_interval, self._poll, job)
            return
        # An adopted pid may have been reused between the check and the open.
        if job.popen is None and not job.state.is_process(start_ticks(job.state.pid)):
            os.close(fd)
            self._ended(job)
            return
        job.pidfd = fd
        loop.add_reader(fd, self._on_exit, job)

    def _on_exit(self, job: Job) -> None:
        if job.pidfd is not None:
            asyncio.get_running_loop().remove_reader(job.pidfd)
            os.close(job.pidfd)
            job.pidfd = None
        self._ended(job)

    def _poll(self, job: Job) -> None:
        if self._running.get(job.state.job_id) is not job:
            return
        if job.state.is_process(start_ticks(job.state.pid)):
            asyncio.get_running_loop().call_later(self.poll_interval, self._poll, job)
        else:
            self._ended(job)

    def _ended(self, job: Job, *, cleanup: bool = True) -> None:
        """The wrapper is gone: work out how the script ended and queue its completion."""
        st = job.state
        for timer in job.timers:
            timer.cancel()
        if cleanup:
            # Kill what the script left behind in its process group, as Slurm does. Our
            # own wrapper is not reaped yet, so its pid (the group id) cannot be reused.
            self._killpg(job, signal.SIGKILL)
        wrapper_rc = job.popen.wait() if job.popen is not None else None
        status = self.spool.read_status(st.status_file)
        if status is not None:
            exit_code, sig = decode_status(status)
        elif wrapper_rc is not None and wrapper_rc < 0:
            exit_code, sig = 0, -wrapper_rc
        elif wrapper_rc is not None:
            exit_code, sig = wrapper_rc & 0xFF, 0
        else:  # gone while no agent watched, without a word: lost
            log.warning("job %d: process vanished without an exit status, reported as killed", st.job_id)
            exit_code, sig = 0, LOST_SIGNAL
        if self._running.get(st.job_id) is job:
            del self._running[st.job_id]
        self._seq += 1
        completion = Completion(
            job_id=st.job_id,
            node=st.node,
            exit_code=exit_code,
            signal=sig,
            end_time=self.clock(),
            seq=self._seq,
            run=st.run,
        )
        log.info("job %d: ended on %s, exit code %d signal %d", st.job_id, st.node, exit_code, sig)
        self._pending[st.job_id] = (job, completion)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            # A short window lets jobs that end at about the same time share one message.
            asyncio.get_running_loop().call_later(FLUSH_WINDOW, self.flush)

    def flush(self) -> None:
        """Spool the completions that ended in this loop iteration, then emit them.

        Batching lets one directory fsync cover all jobs that ended together.
        """
        self._flush_scheduled = False
        batch = list(self._pending.values())
        self._pending.clear()
        silent = [job.state.job_id for job, _ in batch if job.silent]
        for job_id in silent:
            self.spool.remove_job(job_id)
        for job_id in silent:
            if (deferred := self._deferred.pop(job_id, None)) is not None:
                self.launch(deferred)
        completions = [c for job, c in batch if not job.silent]
        self.spool.write_completions(completions)
        for c in completions:
            self._done[c.job_id] = c
        # Jobs that ended together travel together: one message, one controller transaction.
        if len(completions) == 1:
            self.emit({"type": "completed", **completions[0].to_dict()})
        elif completions:
            self.emit({"type": "completed_batch", "completions": [c.to_dict() for c in completions]})

    def close(self) -> None:
        """Stop watching (the jobs keep running; a next agent adopts them)."""
        self.flush()  # completions noticed just now go to the spool, not into the void
        loop = asyncio.get_running_loop()
        for job in self._running.values():
            for timer in job.timers:
                timer.cancel()
            if job.pidfd is not None:
                loop.remove_reader(job.pidfd)
                os.close(job.pidfd)
                job.pidfd = None
