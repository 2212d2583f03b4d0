"""Launching and supervising batch jobs on the node (Linux).

Each job runs as ``/bin/bash -c WRAPPER fsched-job <job dir> <work dir> <launch id>``, in
its own session and process group (the wrapper is the leader; its pid is the job's pid).
The wrapper is a constant string, never built from user data; the job directory is
``/proc/self/fd/N``, a descriptor of the job's spool directory the agent passes down
(see agent/spool.py: the spool is 0700, the job's user owns only its own directory).
The wrapper first writes its pid there, changes to the work directory (as the job's
user, after the switch: never as root), runs the script as a foreground child, so a
trapped signal is handled only once the script has ended, and writes the script's shell
status (``$?``) to the status file, then exits with it. Its traps have a handler
(``:``), not ``''``, because an ignored signal would be inherited as ignored by the
script, while a handled one is reset to the default in the child. Because the status
lands in the spool, a job that ends while the agent is down (stopped, crashed,
``kill -9``) still gets its true exit status reported after the agent restarts. The
status is one ``write`` of ``N\\n``, read only after the wrapper is gone; a partial file
counts as missing, which is why no temporary file and rename (one more process per
job) are needed. Both files are appended to (``>>``), not truncated (``>``): they are new,
or a spare directory's that the agent emptied (agent/spool.py), and on ext4 a truncation
makes the file's close allocate and write its data at once (``auto_da_alloc``), which
held each wrapper a millisecond or more of wall time per file here.

A work directory that vanished between the agent's check and the wrapper's ``cd`` is
handled as slurmstepd does: ``couldn't chdir to `DIR': REASON: going to /tmp instead``
on the job's stderr, and the script runs in /tmp. The agent's own check before the
launch (``_check_work_dir``) catches the usual case with a ``launch_failed``.

Exactly once: before the fork the agent renames a launch intent (the job's JobState
with pid 0 and a random launch id, the wrapper's last argument) into the spool. An agent
that dies between the fork and recording the pid leaves the intent; the next agent's
``recover`` looks for the wrapper (its pid file, then a /proc scan for that launch id)
and adopts it if alive, completes it from its status file if it ran and ended, and
drops the launch only when no wrapper ever existed (the controller then relaunches it:
it is not in ``running``). ``FSCHED_AGENT_FAULT=before_fork|after_fork`` makes the agent
``os._exit`` at that point of a launch: a test-only hook for the crash tests.

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
Output files are opened without truncating them and truncated only once everything
else of the launch has succeeded: a launch that fails leaves them as they were.

Any error while starting a job becomes ``launch_failed`` with its message, never a job
left RUNNING without a process. A spool that cannot be written (removed, full, no
permission) sets ``problem``: the agent sends ``drain`` for its nodes once with that
reason, refuses launches, keeps running jobs and keeps their completions in memory
(still sent, and re-sent on register), and re-checks the spool every
``SPOOL_RECHECK`` seconds; once it is usable again the kept completions and states are
written back and ``problem`` is cleared, but the nodes stay drained until an
administrator resumes them, as Slurm keeps a node drained.

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
import secrets
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent import job_path, job_signals, paths, user_env
from agent.allocations import HeldAllocation, credential_env
from agent.containment import Containment, job_limits
from agent.gres_env import gres_environment
from agent.prolog import NodeHooks, TaskEdits
from agent.spool import SCRIPT_NAME, Completion, JobState, Spool, SpoolLocked
from slurmwords import agent_messages as am
from slurmwords import step_layout

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
# "Terminated" notices never land in the job's error file. $1 is the job's directory
# (/proc/self/fd/N), $2 the work directory, $3 the launch id (only for recovery to find
# the wrapper). A failed cd is retried in a subshell only to learn its reason.
WRAPPER = f"""exec 3>&2 2>/dev/null
printf '%s\\n' $$ >>"$1/pid"
{_HANDLERS}
cd -- "$2" || {{
e=$(cd -- "$2" 2>&1)
printf '%s\\n' "slurmstepd: error: couldn't chdir to \\`$2': ${{e##*: }}: going to /tmp instead" >&3
cd /tmp || exit 1
}}
c=1
"$1/script" 2>&3 3>&-
r=$?
printf '%s\\n' "$r" >>"$1/status"
exit "$r"
"""
WRAPPER_NAME = "fsched-job"
LOST_SIGNAL = int(signal.SIGKILL)
# Signals that cannot be swallowed by a handler go out at once; others wait for the script.
_UNCATCHABLE = frozenset({signal.SIGKILL, signal.SIGSTOP, signal.SIGCONT})
SETTLE_POLL = 0.005  # seconds between checks that the script runs
SETTLE_MAX = 1.0  # then send anyway: a script without #! never shows its name
_MAX_SIGNAL = int(signal.SIGRTMAX)
SPOOL_RECHECK = 5.0  # seconds between checks of an unusable spool
# An unacknowledged completion is sent again after this long, then after twice that, up
# to RESEND_CAP: the controller may have dropped it (its database restarting) while the
# connection stayed up, and a connection that stays up never re-registers.
RESEND_AFTER = 10.0
RESEND_CAP = 80.0
# Test-only crash points (see the module docstring); read once, at import.
_FAULT = os.environ.get("FSCHED_AGENT_FAULT", "")
FAULT_STATUS = 70


def _fault(point: str) -> None:
    if point == _FAULT:
        os._exit(FAULT_STATUS)


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


def resolve_account(user: str, *, root_jobs: bool = True) -> Account:
    """The account a job of ``user`` runs as on this node (see the module docstring).

    A root agent runs a uid-0 account's job only when ``root_jobs`` (slurm.conf's
    ``DisableRootJobs=NO`` or ``--allow-root-jobs``, agent/nodeconf.py) says so.
    """
    if os.geteuid() != 0:
        return Account(name=user)
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        raise LaunchError(f"user {user} does not exist on this node") from None
    if pw.pw_uid == 0:
        if not root_jobs:
            raise LaunchError(
                f"user {user} is root and root jobs are disabled on this node (DisableRootJobs): "
                "set DisableRootJobs=NO in slurm.conf or start the agent with --allow-root-jobs"
            )
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
    # srun, squeue, ... by name inside the job, as on a Slurm node (agent/job_path.py); a job
    # with no PATH of its own that asked for its login environment gets it in _start.
    if "PATH" in env or not job.get("get_user_env"):
        env["PATH"] = job_path.with_slurm_commands(env.get("PATH"))
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
        # sbatch's own (its cwd, whatever --chdir says); the working directory from an
        # older client.
        "SLURM_SUBMIT_DIR": env.get("SLURM_SUBMIT_DIR") or str(job.get("work_dir") or ""),
        "SLURM_JOB_PARTITION": str(job.get("partition") or ""),
        "SLURM_JOB_USER": str(job.get("user") or ""),
        "SLURM_JOB_UID": str(account.uid if account.uid is not None else os.geteuid()),
        "SLURM_JOB_GID": str(account.gid if account.gid is not None else os.getegid()),
        # Slurm's count of the job's requeues: which run of the job this is.
        "SLURM_RESTART_COUNT": str(int(job.get("run") or 0)),
        "SLURMD_NODENAME": host,
        # The batch step is task 0 of node 0 (slurmstepd's setup_env for the batch task).
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "0",
        "SLURM_GTIDS": "0",
        # No topology plugin: the node's own name at the top of the tree.
        "SLURM_TOPOLOGY_ADDR": host,
        "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
    }
    env.update(values)
    env.update(_credential_environment(job))
    env.update(gres_environment(job))  # CUDA_VISIBLE_DEVICES and the like (agent/gres_env.py)
    if job.get("ntasks_per_node"):  # sbatch sets it only for --ntasks-per-node
        env["SLURM_NTASKS_PER_NODE"] = str(job["ntasks_per_node"])
    env.update(_layout_environment(job, env))
    # A job submitted from inside an array task must not inherit its array identity.
    env.pop("SLURM_ARRAY_JOB_ID", None)
    env.pop("SLURM_ARRAY_TASK_ID", None)
    if job.get("array_task_id") is not None:
        env["SLURM_ARRAY_JOB_ID"] = str(job.get("array_job_id") or job["job_id"])
        env["SLURM_ARRAY_TASK_ID"] = str(job["array_task_id"])
    return env


# Launch fields set only when they hold something, as env_array_for_batch_job and
# setup_env test each before setting it.
_SET_WHEN_GIVEN = (
    ("account", "SLURM_JOB_ACCOUNT"),
    ("qos", "SLURM_JOB_QOS"),
    ("reservation", "SLURM_JOB_RESERVATION"),
    ("licenses", "SLURM_JOB_LICENSES"),
    ("mem_per_cpu", "SLURM_MEM_PER_CPU"),
    ("mem_per_node", "SLURM_MEM_PER_NODE"),
    ("start_time", "SLURM_JOB_START_TIME"),
    ("end_time", "SLURM_JOB_END_TIME"),
)


def _credential_environment(job: Mapping[str, Any]) -> dict[str, str]:
    """What slurmd takes from the launch and the job's credential, each only when set."""
    out = {name: str(job[key]) for key, name in _SET_WHEN_GIVEN if job.get(key)}
    if "SLURM_MEM_PER_CPU" in out:  # the request is one or the other, never both
        out.pop("SLURM_MEM_PER_NODE", None)
    return out


def _layout_environment(job: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """What slurmd's env_array_for_batch_job adds about the allocation: the CPUs per node,
    the tasks per node of a block layout (SLURM_NTASKS as sbatch set it, else
    SLURM_NTASKS_PER_NODE on every node, else as many tasks as the CPUs hold), and
    ENVIRONMENT=BATCH, HOSTNAME the node's name."""
    out = {"ENVIRONMENT": "BATCH"}
    if job.get("batch_host"):
        out["HOSTNAME"] = str(job["batch_host"])
    try:
        cpus = [int(c) for c in job.get("cpus_per_node") or ()]
        per_task = max(1, int(env.get("SLURM_CPUS_PER_TASK") or 1))
        slots = [max(1, c // per_task) for c in cpus]
        if env.get("SLURM_NTASKS"):
            ntasks = int(env["SLURM_NTASKS"])
        elif env.get("SLURM_NTASKS_PER_NODE"):
            ntasks = int(env["SLURM_NTASKS_PER_NODE"]) * len(cpus)
        else:
            ntasks = sum(slots)
        if cpus:
            out["SLURM_JOB_CPUS_PER_NODE"] = step_layout.compress_counts(cpus)
            out["SLURM_TASKS_PER_NODE"] = step_layout.compress_counts(step_layout.block_counts(ntasks, slots))
    except (TypeError, ValueError):  # a count the job's own environment spelt wrong
        pass
    return out


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


def _truncate(fd: int) -> None:
    """Empty an output file now that the launch will go ahead (not /dev/null, a FIFO...)."""
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.ftruncate(fd, 0)


# Launch fields that name paths or the user, with the words used in launch_failed.
_TEXT_FIELDS = {
    "work_dir": "working directory",
    "std_out": "output file name",
    "std_err": "error file name",
    "std_in": "input file name",
    "user": "user name",
}


def check_launch_text(job: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Raise LaunchError for a NUL byte (or an ``=`` in a variable name) that the
    kernel would refuse or silently cut: the job must fail, not hang RUNNING."""
    for key, what in _TEXT_FIELDS.items():
        value = job.get(key)
        if isinstance(value, str) and "\0" in value:
            raise LaunchError(f"invalid {what}: contains a NUL byte")
    for name, value in env.items():
        if not name or "\0" in name or "=" in name:
            raise LaunchError(f"invalid environment variable name {name!r}")
        if "\0" in value:
            raise LaunchError(f"invalid environment variable {name}: its value contains a NUL byte")


def _cmdline(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[:-1]
    except OSError:
        return []


def is_wrapper(pid: int, launch: str) -> bool:
    """Whether ``pid`` is the wrapper started with launch id ``launch``."""
    args = _cmdline(pid)
    return len(args) > 4 and args[3] == WRAPPER_NAME.encode() and args[-1] == launch.encode()


def find_wrapper(launch: str) -> int | None:
    """The pid of the live wrapper started with launch id ``launch``, found in /proc."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and is_wrapper(int(entry.name), launch):
            return int(entry.name)
    return None


@dataclass(eq=False)
class Job:
    """A job whose process group leader (the wrapper) is alive, as far as we know."""

    state: JobState
    popen: subprocess.Popen[bytes] | None  # None: adopted from a previous agent
    silent: bool = False  # killed at the controller's request: report nothing
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    pidfd: int | None = None


Emit = Callable[[am.Message], None]


def _sent(c: Completion) -> am.Completion:
    """A spooled completion as the protocol carries it (the same fields)."""
    return am.Completion(**c.to_dict())


def _completed(c: Completion) -> am.Completed:
    return am.Completed(**c.to_dict())


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
        root_jobs: bool = True,
        resend_after: float = RESEND_AFTER,
        containment: Containment | None = None,
        hooks: NodeHooks | None = None,
        api_url: str | None = None,
        simulate_exec: bool = False,
    ) -> None:
        self.spool = spool
        self.simulate_exec = simulate_exec
        # The controller's HTTP URL, handed to the jobs as FSCHED_URL (agent/allocations.py).
        self.api_url = api_url
        # Allocation-only jobs held here: no process (agent/allocations.py).
        self._allocations: dict[int, HeldAllocation] = {}
        # CPU binding, memory limits and usage sampling (agent/containment.py).
        self.containment = containment or Containment()
        self.hooks = hooks or NodeHooks()  # Prolog, Epilog, TaskProlog... (agent/prolog.py)
        self.nodes = frozenset(nodes)
        self.emit = emit
        self.clock = clock
        self.poll_interval = poll_interval
        self.root_jobs = root_jobs
        # The agent's health: None while the spool is usable, else why not (the daemon
        # drains the hosted nodes with this reason after each registration).
        self.problem: str | None = None
        self._running: dict[int, Job] = {}
        self._pending: dict[int, tuple[Job | HeldAllocation, Completion]] = {}  # ended, not yet spooled
        self._done: dict[int, Completion] = {}  # spooled, not yet acknowledged
        # Launches of a later run waiting for the earlier run's processes to be reaped, so
        # the two never share the job's spool directory.
        self._deferred: dict[int, Mapping[str, Any]] = {}
        self._seq = 0
        self._starts: list[am.Started] = []  # started, not yet told (sent with the next flush)
        self._flush_scheduled = False
        self.resend_after = resend_after
        # Unacknowledged completions: job id -> (monotonic time it is due again, interval).
        self._resend: dict[int, tuple[float, float]] = {}

    # -- views for register ---------------------------------------------------------

    def running(self) -> list[am.RunningJob]:
        held = [
            am.RunningJob(job_id=a.job_id, node=a.node, pid=0, run=a.run) for a in self._allocations.values()
        ]
        return [
            am.RunningJob(job_id=j.state.job_id, node=j.state.node, pid=j.state.pid, run=j.state.run)
            for j in self._running.values()
            if not j.silent
        ] + held

    def held(self) -> list[int]:
        """The jobs this agent holds, for the ping (slurmd's registration job list):
        running, held allocations, starting (prologue, or waiting for an earlier run to be
        reaped) and ended but not yet reported. A job whose ``completed`` was sent is not
        listed: that report reaches the controller before the ping, on the same connection.
        Killed at the controller's request (``registered.kill``): not the controller's any more."""
        ids = {job_id for job_id, j in self._running.items() if not j.silent}
        # Ended, waiting for the flush: a silent one is not reported, so not listed either.
        ids.update(job_id for job_id, (j, _) in self._pending.items() if not j.silent)
        ids.update(self._allocations, self._deferred, self.hooks.starting_jobs())
        return sorted(ids)

    def unacknowledged(self) -> list[am.Completion]:
        return [_sent(c) for c in self._done.values()]

    def completions(self) -> list[dict[str, Any]]:
        return [c.to_wire() for c in self.unacknowledged()]

    def restated(self) -> None:
        """Every unacknowledged completion was just sent (in ``register``): resend later."""
        now = time.monotonic()
        self._resend = {job_id: (now + self.resend_after, self.resend_after) for job_id in self._done}

    def due_completions(self) -> list[am.Completion]:
        """The unacknowledged completions due to be sent again; each is due later next time."""
        now = time.monotonic()
        due = []
        for job_id, (when, interval) in list(self._resend.items()):
            if job_id not in self._done:
                del self._resend[job_id]
            elif when <= now:
                due.append(_sent(self._done[job_id]))
                longer = min(interval * 2, RESEND_CAP)
                self._resend[job_id] = (now + longer, longer)
        return due

    def _resend_now(self, job_id: int, why: str) -> None:
        """Answer a request about a job that ended with its completion, which was not acknowledged."""
        log.info(
            "job %d: %s for a job that already ended: its unacknowledged completion re-sent", job_id, why
        )
        self.emit(_completed(self._done[job_id]))

    def is_reportable(self, job_id: int) -> bool:
        """Whether a queued ``completed`` for this job should still be sent."""
        return job_id in self._done

    # -- start-up -------------------------------------------------------------------

    def recover(self) -> int:
        """Lock and load the spool: adopt live jobs, complete the ones that ended meanwhile.

        Must run inside the event loop. Returns the number of adopted (live) jobs.
        Raises SpoolLocked when another agent serves this spool.
        """
        self.spool.lock()
        self._done = self.spool.completions()
        self._seq = max((c.seq for c in self._done.values()), default=0)
        adopted = 0
        for st in self.spool.states() + self._found_launches():
            if st.job_id in self._done:
                continue  # ended earlier, waiting for its ack
            job = Job(state=st, popen=None)
            if st.is_process(start_ticks(st.pid)):
                log.info("job %d: adopted running process %d on %s", st.job_id, st.pid, st.node)
                self.containment.adopted(st.job_id, st.pid, st.contain)
                self._running[st.job_id] = job
                self._watch(job)
                adopted += 1
            else:
                # Its pid may belong to someone else by now: no clean-up kill.
                self._ended(job, cleanup=False)
        self.flush()
        return adopted

    def _found_launches(self) -> list[JobState]:
        """Launch intents of an agent that died around the fork, resolved to processes.

        A wrapper alive is recorded as the job's process; one that ran (it wrote its pid
        or status) and ended comes back with its recorded pid, to be completed; a launch
        that never got a wrapper is dropped, for the controller to relaunch.
        """
        found = []
        for intent in self.spool.launches():
            job_id, launch = intent.job_id, intent.launch
            pid = self.spool.read_pid(job_id)
            if pid is None or not is_wrapper(pid, launch):
                pid = find_wrapper(launch) or pid
            ticks = start_ticks(pid) if pid is not None and is_wrapper(pid, launch) else None
            if pid is not None and ticks is not None:
                log.info("job %d: wrapper %d of an interrupted launch found alive", job_id, pid)
                st = intent.with_process(pid, ticks, ticks)
                self._spool_write(self.spool.write_state, st)
            elif pid is not None or self.spool.read_status(intent.status_file) is not None:
                log.info("job %d: wrapper of an interrupted launch ran and ended", job_id)
                st = intent.with_process(pid or 0, 0, -1)  # no process can match: it ended
            else:
                log.info("job %d: launch interrupted before its wrapper started, dropped", job_id)
                self._spool_write(self.spool.remove_job, job_id)
                continue
            found.append(st)
        return found

    # -- spool health ---------------------------------------------------------------

    def _spool_write(self, write: Callable[..., None], *args: Any) -> bool:
        """Run one spool write; a failure makes the spool a problem instead of an error."""
        try:
            write(*args)
        except OSError as exc:
            self._spool_failed(exc)
            return False
        return True

    def _spool_failed(self, exc: OSError) -> None:
        log.error("spool %s cannot be written: %s", self.spool.root, exc)
        if self.problem is not None:
            return
        self.problem = f"spool unusable: {exc.strerror or exc}"
        self.emit(am.Drain(nodes=sorted(self.nodes), reason=self.problem))
        with contextlib.suppress(RuntimeError):  # no loop: the next launch re-checks
            asyncio.get_running_loop().call_later(SPOOL_RECHECK, self._recheck_spool)

    def _recheck_spool(self) -> None:
        """Write back what was kept in memory once the spool is usable again."""
        try:
            self.spool.check()
            self.spool.write_completions(list(self._done.values()))
            for job in self._running.values():
                self.spool.write_state(job.state)
        except (OSError, SpoolLocked) as exc:
            log.debug("spool %s still unusable: %s", self.spool.root, exc)
            asyncio.get_running_loop().call_later(SPOOL_RECHECK, self._recheck_spool)
            return
        nodes = ",".join(sorted(self.nodes))
        log.warning("spool %s usable again; nodes %s stay drained until resumed", self.spool.root, nodes)
        self.problem = None

    # -- controller requests --------------------------------------------------------

    def launch(self, job: Mapping[str, Any], *, edits: TaskEdits | None = None) -> None:
        """Start a job, or answer ``launch_failed``: no error leaves it unanswered.
        ``edits``: the prologue has run (agent/prolog.py), with what TaskProlog asked for."""
        try:
            job_id = int(job["job_id"])
        except Exception as exc:  # nothing to answer without a job id
            log.warning("launch without a usable job_id dropped (%s: %s)", type(exc).__name__, exc)
            return
        node, run = "", 0
        try:
            node = str(job.get("batch_host") or "")
            run = int(job.get("run") or 0)
            self._launch(job_id, node, run, job, edits)
        except Exception as exc:
            if isinstance(exc, LaunchError):
                error = str(exc)
            else:
                log.exception("job %d: unexpected error while starting it", job_id)
                error = f"cannot start job: {type(exc).__name__}: {exc}"
            if job_id not in self._running and job_id not in self._pending and job_id not in self._done:
                with contextlib.suppress(OSError):
                    self.spool.remove_job(job_id)
            log.warning("job %d: launch failed on %s: %s", job_id, node, error)
            self.emit(am.LaunchFailed(job_id=job_id, node=node, error=error, time=self.clock(), run=run))

    def _launch(
        self, job_id: int, node: str, run: int, job: Mapping[str, Any], edits: TaskEdits | None = None
    ) -> None:
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
        if job_id in self._allocations:
            held = self._allocations[job_id]
            if held.run == run:
                log.info("job %d: launch repeated, allocation already held", job_id)
                self.emit(am.Started(job_id=job_id, node=held.node, pid=0, time=held.started, run=run))
                return
            del self._allocations[job_id]  # an earlier run's: nothing to reap
        if job_id in self._running:
            st = self._running[job_id].state
            log.info("job %d: launch repeated, already running", job_id)
            self.emit(am.Started(job_id=job_id, node=st.node, pid=st.pid, time=st.started, run=st.run))
            return
        if job_id in self._pending or job_id in self._done:
            log.info("job %d: launch repeated, already completed", job_id)
            if job_id in self._done:
                self.emit(_completed(self._done[job_id]))
            return
        if node not in self.nodes:
            raise LaunchError(f"node {node} is not served by this agent")
        if self.problem is not None:
            raise LaunchError(f"agent cannot launch jobs: {self.problem}")
        if edits is None and self.hooks.has_prologue(job):
            self.hooks.prologue(job, self)  # launches again, with edits, once it succeeds
            return
        self._start(job_id, node, run, job, edits)

    def _start(
        self, job_id: int, node: str, run: int, job: Mapping[str, Any], edits: TaskEdits | None = None
    ) -> None:
        if job.get("allocation") is True:
            self._hold(job_id, node, run, job)
            return
        if self.simulate_exec:
            self._simulate(job_id, node, run, job)
            return
        account = resolve_account(str(job.get("user") or ""), root_jobs=self.root_jobs)
        env = job_environment(job, account)
        if self.hooks.cluster:  # slurm.conf's ClusterName, as the registration gave it
            env["SLURM_CLUSTER_NAME"] = self.hooks.cluster
        env.update(credential_env(job, self.api_url))
        path = env.get("PATH")  # job_environment's, with Slurm's commands, unless it set none
        try:
            env = user_env.merged(job, account, env)  # --get-user-env
        except user_env.UserEnvError as exc:
            raise LaunchError(str(exc)) from None
        if path is None or env.get("PATH") != path:  # the login PATH, if it was taken
            env["PATH"] = job_path.with_slurm_commands(env.get("PATH"))
        if edits is not None:
            edits.apply(env)
        check_launch_text(job, env)
        files = paths.job_files(job)
        work_dir = str(job.get("work_dir") or "/")
        fds: list[int] = []
        state_fd, popen = -1, None
        try:
            with effective(account):
                _check_work_dir(work_dir)
                # Not truncated yet: a launch failing below leaves the files as they were.
                append = paths.appends(job)  # --open-mode=append, or a requeued run
                flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
                out = _open(files.stdout, flags, "stdout")
                fds.append(out)
                err = out
                if files.stderr is not None:
                    err = _open(files.stderr, flags, "stderr")
                    fds.append(err)
                stdin: int = subprocess.DEVNULL
                if files.stdin is not None:
                    stdin = _open(files.stdin, os.O_RDONLY, "stdin")
                    fds.append(stdin)
            owner = (account.uid, account.gid) if account.switches else None
            try:
                dir_fd = self.spool.prepare_job(job_id, str(job.get("script") or ""), owner)  # type: ignore[arg-type]
            except OSError as exc:
                self._spool_failed(exc)
                raise LaunchError(f"agent cannot launch jobs: {self.problem}") from None
            fds.append(dir_fd)
            ticks_before = boot_ticks()
            intent = JobState(
                job_id=job_id, node=node, pid=0, pgid=0, started=self.clock(),
                start_ticks=ticks_before, start_ticks_max=0,
                status_file=self.spool.status_path(job_id), run=run,
                launch=f"launch={job_id}.{run}.{secrets.token_hex(8)}",
            )  # fmt: skip
            try:
                state_fd = self.spool.begin_launch(intent)
            except OSError as exc:
                self._spool_failed(exc)
                raise LaunchError(f"agent cannot launch jobs: {self.problem}") from None
            _fault("before_fork")
            ids: dict[str, Any] = {}
            if account.switches:
                ids = {"user": account.uid, "group": account.gid, "extra_groups": list(account.groups)}
            cpus, mem = job_limits(job)
            wrapper = [BASH, "-c", WRAPPER, WRAPPER_NAME, f"/proc/self/fd/{dir_fd}", work_dir, intent.launch]
            try:
                for fd in () if append else {out, err}:
                    _truncate(fd)
                if edits is not None:
                    edits.write(out)  # TaskProlog's print lines
                # The job's CPUs are bound around the fork, its cgroup joined right after it.
                with self.containment.spawning(job_id, node, cpus, mem) as held:
                    # No cwd=: the child would chdir as root, before the switch; the wrapper does.
                    popen = subprocess.Popen(
                        wrapper,
                        stdin=stdin,
                        stdout=out,
                        stderr=err,
                        env=env,
                        start_new_session=True,
                        close_fds=True,
                        pass_fds=(dir_fd,),
                        **ids,
                    )
                    # Its record goes into the job's state below, not a file of its own.
                    contain = self.containment.started(held, popen.pid, err, file_record=False)
            except (OSError, ValueError) as exc:  # ValueError: e.g. a NUL byte in the environment
                raise LaunchError(f"cannot start job: {exc}") from None
        finally:
            for fd in fds:
                os.close(fd)
            if state_fd >= 0 and popen is None:  # no process: launch() removes the intent
                os.close(state_fd)
        _fault("after_fork")
        state = intent.with_process(popen.pid, ticks_before, boot_ticks(), contain)
        # Past the fork the job runs whatever happens: a spool failure only loses the record.
        self._spool_write(self.spool.record_process, state_fd, state)
        j = Job(state=state, popen=popen)
        self._running[job_id] = j
        self._watch(j)
        self.hooks.remember(job)
        job_signals.arm(self, j, job)
        log.info("job %d: started on %s as pid %d (user %s)", job_id, node, popen.pid, account.name)
        started = am.Started(job_id=job_id, node=node, pid=popen.pid, time=state.started, run=state.run)
        self._tell_started(started)

    def _hold(self, job_id: int, node: str, run: int, job: Mapping[str, Any]) -> None:
        """An allocation-only job: its Prolog has run, and no process starts."""
        held = HeldAllocation(job_id=job_id, node=node, run=run, started=self.clock())
        self._allocations[job_id] = held
        self.hooks.remember(job)  # its Epilog runs at its end, as any job's
        log.info("job %d: allocation held on %s, no process", job_id, node)
        self._tell_started(am.Started(job_id=job_id, node=node, pid=0, time=held.started, run=run))

    def _simulate(self, job_id: int, node: str, run: int, job: Mapping[str, Any]) -> None:
        """--simulate-exec: the job holds its node as an allocation does, without a
        process, and ends by itself after its FSCHED_SIM_RUN_TIME (a cancel ends it
        sooner, as it ends an allocation)."""
        environment = job.get("environment") or {}
        try:
            seconds = max(0.0, float(environment.get("FSCHED_SIM_RUN_TIME", 0)))
        except (TypeError, ValueError):
            raise LaunchError("FSCHED_SIM_RUN_TIME: a number of seconds") from None
        self._hold(job_id, node, run, job)
        asyncio.get_running_loop().call_later(seconds, self._simulated_end, job_id, run)

    def _simulated_end(self, job_id: int, run: int) -> None:
        held = self._allocations.get(job_id)
        if held is not None and held.run == run:
            self._end_allocation(job_id, 0, 0)

    def _end_allocation(self, job_id: int, exit_code: int, sig: int) -> None:
        held = self._allocations.pop(job_id)
        self._seq += 1
        completion = Completion(
            job_id=job_id, node=held.node, exit_code=exit_code, signal=sig,
            end_time=self.clock(), seq=self._seq, run=held.run,
        )  # fmt: skip
        log.info("job %d: allocation ended on %s, exit code %d signal %d", job_id, held.node, exit_code, sig)
        self._pending[job_id] = (held, completion)
        self._flush_soon()

    def signal(self, job_id: int, name: str | int) -> None:
        if job_id in self._allocations:
            log.info("job %d: signal %s for an allocation without processes, ignored", job_id, name)
            return
        job = self._running.get(job_id)
        if job is None and job_id in self._done:
            self._resend_now(job_id, f"signal {name}")
            return
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

    def notify(self, job_id: int, message: str) -> None:
        """scontrol notify: slurmstepd logs the message as an error, which a batch job's
        stderr receives (src/slurmd/slurmstepd/req.c, _handle_notify_job)."""
        told = job_id in self._running and self.containment.tell(job_id, f"slurmstepd: error: {message}\n")
        if not told:
            log.info("job %d: a notification for a job without a stderr file here, dropped", job_id)

    def cancel(self, job_id: int, kill_wait: float, status: tuple[int, int] | None = None) -> None:
        """TERM the job's process group, KILL it after ``kill_wait`` if it still lives.
        An allocation-only job ends at once: with ``status`` (exit code, signal) when its
        holder released it, else as killed by SIGTERM (the controller records why)."""
        if job_id in self._allocations:
            exit_code, sig = status if status is not None else (0, int(signal.SIGTERM))
            self._end_allocation(job_id, exit_code, sig)
            return
        job = self._running.get(job_id)
        if job is None and job_id in self._done:
            # The controller still thinks it runs (it missed the completion): tell it again.
            self._resend_now(job_id, "cancel")
            return
        if job is None and self.hooks.cancel_start(job_id, kill_wait):
            return
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
            if self._allocations.pop(job_id, None) is not None:
                log.info("job %d: allocation dropped at the controller's request, no completion", job_id)
                continue
            job = self._running.get(job_id)
            if job is not None:
                log.info("job %d: killed at the controller's request, no completion", job_id)
                job.silent = True
                self._killpg(job, signal.SIGKILL)
            elif job_id in self._pending:
                self._pending[job_id][0].silent = True
            elif self.hooks.drop(job_id):
                log.info("job %d: killed during its prolog at the controller's request", job_id)
            else:
                self._done.pop(job_id, None)
                self._resend.pop(job_id, None)
                self._spool_write(self.spool.remove_job, job_id)

    def ack(self, job_ids: Iterable[int]) -> None:
        for job_id in job_ids:
            if job_id in self._running or job_id in self._pending:
                log.warning("job %d: ack for a job that has not completed, ignored", job_id)
                continue
            self._done.pop(job_id, None)
            self._resend.pop(job_id, None)
            self._spool_write(self.spool.remove_job, job_id)
            log.debug("job %d: completion acknowledged", job_id)

    # -- supervision ----------------------------------------------------------------

    def running_job(self, job_id: int) -> Job | None:
        return self._running.get(job_id)

    def send_signal(self, job: Job, sig: signal.Signals) -> None:
        """Signal the job's process group once its script can receive it."""
        self._send(job, (sig,))

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
        # Read before the wrapper is reaped: its zombie still shows its children's CPU time.
        usage = self.containment.ended(st.job_id, st.pid if job.popen is not None else 0)
        wrapper_rc = job.popen.wait() if job.popen is not None else None
        status = self.spool.read_status(st.status_file)
        if status is not None:
            exit_code, sig = decode_status(status)
        elif wrapper_rc is not None and wrapper_rc < 0:
            exit_code, sig = 0, -wrapper_rc
        elif wrapper_rc is not None:  # no status file (spool gone): the wrapper exits with it
            exit_code, sig = decode_status(wrapper_rc)
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
            out_of_memory=usage.out_of_memory or None,
            max_rss_kb=usage.max_rss_kb,
            total_cpu_secs=usage.total_cpu_secs,
        )
        log.info("job %d: ended on %s, exit code %d signal %d", st.job_id, st.node, exit_code, sig)
        self._pending[st.job_id] = (job, completion)
        self._flush_soon()

    def _tell_started(self, msg: am.Started) -> None:
        """``started`` goes with the next flush: a launch burst's starts share one message
        (one controller transaction, where each cost one), sent before that flush's
        completions. Nothing waits on it: the job runs already and its end is spooled."""
        self._starts.append(msg)
        self._flush_soon()

    def _flush_soon(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            # A short window lets jobs that start or end at about the same time share one message.
            asyncio.get_running_loop().call_later(FLUSH_WINDOW, self.flush)

    def _emit_starts(self) -> None:
        starts, self._starts = self._starts, []
        if len(starts) == 1:
            self.emit(starts[0])
        elif starts:
            batch = [
                am.JobStart(job_id=s.job_id, node=s.node, pid=s.pid, time=s.time, run=s.run) for s in starts
            ]
            self.emit(am.StartedBatch(started=batch))

    def flush(self) -> None:
        """Send the starts told since the last flush, then spool the completions that ended
        in this loop iteration and emit them.

        Batching lets one directory fsync cover all jobs that ended together.
        """
        self._flush_scheduled = False
        self._emit_starts()
        batch = list(self._pending.values())
        self._pending.clear()
        for _, c in batch:  # TaskEpilog and Epilog, whether reported or not
            self.hooks.epilogue(c, self)
        silent = [job.state.job_id for job, _ in batch if job.silent]
        for job_id in silent:
            self._spool_write(self.spool.remove_job, job_id)
        for job_id in silent:
            if (deferred := self._deferred.pop(job_id, None)) is not None:
                self.launch(deferred)
        completions = [c for job, c in batch if not job.silent]
        # Unspooled completions still go out and stay in memory until acknowledged.
        self._spool_write(self.spool.write_completions, completions)
        due = time.monotonic() + self.resend_after
        for c in completions:
            self._done[c.job_id] = c
            self._resend[c.job_id] = (due, self.resend_after)
        # Jobs that ended together travel together: one message, one controller transaction.
        if len(completions) == 1:
            self.emit(_completed(completions[0]))
        elif completions:
            self.emit(am.CompletedBatch(completions=[_sent(c) for c in completions]))

    def close(self) -> None:
        """Stop watching (the jobs keep running; a next agent adopts them)."""
        self.flush()  # completions noticed just now go to the spool, not into the void
        self.hooks.close()
        loop = asyncio.get_running_loop()
        for job in self._running.values():
            for timer in job.timers:
                timer.cancel()
            if job.pidfd is not None:
                loop.remove_reader(job.pidfd)
                os.close(job.pidfd)
                job.pidfd = None
