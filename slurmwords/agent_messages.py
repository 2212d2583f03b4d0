"""The messages of the agent protocol (docs/agent-protocol.md), both ways, pure.

The agent and the controller both build what they send from these classes and read what
they receive through :func:`decode`, so the two sides cannot drift apart on a key or a
type: a message either is what its class says or is refused with a MessageError that
names the type and the field. The wire format is the JSON objects the protocol always
had; nothing here changes a key or a value.

Handshake (unsealed): ``hello`` → ``challenge`` → ``auth``. After it, the agent sends
``register`` and its reports; the controller answers ``registered`` and sends commands.
``reboot`` and ``reboot_done`` are ``scontrol reboot``'s.
``power_action`` and ``power_action_done`` are power saving's (an extension of the
cluster core), described here all the same: the agent speaks them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from slurmwords import wire
from slurmwords.wire import Message, MessageError, Record

__all__ = [
    "AGENT_MESSAGES",
    "CONTROLLER_MESSAGES",
    "REGISTRY",
    "Ack",
    "Auth",
    "Cancel",
    "Challenge",
    "Completed",
    "CompletedBatch",
    "Completion",
    "Drain",
    "Hello",
    "JobStart",
    "Launch",
    "LaunchFailed",
    "LaunchJob",
    "LoadIndices",
    "Message",
    "MessageError",
    "NodeInfo",
    "NodeLoad",
    "Ping",
    "PowerAction",
    "PowerActionDone",
    "PrologEpilog",
    "Reboot",
    "RebootDone",
    "Register",
    "Registered",
    "RunEpilog",
    "RunProlog",
    "RunningJob",
    "Signal",
    "Started",
    "StartedBatch",
    "StepDone",
    "StepLaunch",
    "StepSignal",
    "StepUsage",
    "StepUsageRecord",
    "TaskEnd",
    "TaskUsage",
    "decode",
]


# -- records inside messages -------------------------------------------------------


@dataclass(frozen=True)
class NodeInfo(Record):
    """A hosted node as ``register`` announces it."""

    name: str
    cpus: int
    real_memory: int  # MB
    boot_time: float
    features: str | None = None
    # Cloud accounting (scontrol show node shows them).
    instance_id: str | None = None
    instance_type: str | None = None
    extra: str | None = None
    conf: str | None = None  # slurmd -Z: the node's own line, for a node slurm.conf lacks
    # The Location=slurmd PowerActions of the agent's slurm.conf, each with why this node
    # cannot run its program ("" when it can): the controller cannot see a node's files.
    power_actions: dict[str, str] | None = None
    # NodeFeaturesPlugins=node_features/helpers: the active features its Helpers report.
    active_features: str | None = None
    # The host's machine and system, as slurmd reports them (scontrol's Arch=, OS=), and
    # the agent's Slurm-compatible version (Version=).
    arch: str | None = None
    os: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class RunningJob(Record):
    job_id: int
    node: str
    pid: int
    run: int | None = None


@dataclass(frozen=True)
class Completion(Record):
    """A job's end; the agent keeps it spooled until the controller acknowledges it."""

    job_id: int
    node: str
    exit_code: int
    signal: int  # 0: none
    end_time: float
    seq: int | None = None  # the agent's own counter; the controller does not read it
    # Which run of the job ended; absent means the current one (an agent of an earlier release).
    run: int | None = None
    # Containment: true when the job was killed for its memory (the controller records
    # OUT_OF_MEMORY); its maximum RSS and CPU time for accounting. Absent: not known.
    out_of_memory: bool | None = None
    max_rss_kb: int | None = None
    total_cpu_secs: float | None = None


@dataclass(frozen=True)
class JobStart(Record):
    """A launched job's process exists: the fields of ``started``."""

    job_id: int
    node: str
    pid: int
    time: float | None = None
    run: int | None = None


@dataclass(frozen=True)
class LoadIndices(Record):
    """The load indices of fsched's load thresholds (load.core.indices): available MiB,
    smoothed CPU utilisation %, smoothed run queues, and the latest run queue itself."""

    mem: int
    ut: float
    r15s: float
    r1m: float
    r15m: float
    run_queue: int


@dataclass(frozen=True)
class NodeLoad(Record):
    cpu_load: float
    free_mem: int  # MB
    # Absent from an agent that cannot read its /proc files (or of an earlier release).
    indices: LoadIndices | None = None


@dataclass(frozen=True)
class LaunchJob(Record):
    """The launch object: what the agent needs to start a batch job.

    Every key is always sent, null where there is nothing (a null ``std_err`` is the
    output file). The agent reads it key by key and answers ``launch_failed`` for a bad
    one, so a ``launch`` carries it as a plain object (:attr:`Launch.job`).
    """

    job_id: int
    run: int  # restart count: echoed back, so a late end of an earlier run is told apart
    name: str
    user: str
    script: str
    argv: list[str]
    work_dir: str
    std_out: str | None
    std_err: str | None
    std_in: str | None
    environment: dict[str, str]
    batch_host: str
    node_list: str
    num_nodes: int
    cpus_on_node: int
    partition: str
    account: str
    qos: str
    array_job_id: int | None
    array_task_id: int | None
    time_limit: int | None  # minutes; the controller enforces it
    # MB of memory the job holds on the batch host (0: none charged, no limit); absent
    # from a controller of an earlier release. The agent enforces it (agent/containment.py).
    mem_on_node: int | None = None
    # sbatch --open-mode ("append", "truncate"; None: truncate) and --signal
    # ("[R|B:]num@secs", see slurmwords.job_options); left out by older controllers.
    open_mode: str | None = None
    signal: str | None = None
    ntasks_per_node: int | None = None  # sbatch --ntasks-per-node: SLURM_NTASKS_PER_NODE
    get_user_env: str | None = None  # sbatch --get-user-env ("8L"): see agent/user_env.py
    # GPUs and other GRES: the devices given on this node ([name, type, index]) and the
    # request (gpus, gpus_per_node, gpus_per_task, cpus_per_gpu): see agent/gres_env.py.
    gres: dict[str, Any] | None = None
    # An allocation-only job (salloc's): the Prolog runs, no process starts (issue #16).
    allocation: bool = False
    # The job credential for its processes (FSCHED_JOB_CREDENTIAL); never written to disk.
    credential: str | None = None
    # hres/lua: each plugin resource's ``prep`` (name, config, plugin_args, payload,
    # async_running, layers), in resources.yaml's order, fixed at the job's start, for the
    # node callbacks (agent/hres_node.py); None: the job uses no resource with a plugin.
    hres: list[dict[str, Any]] | None = None
    # The CPUs the job holds on each of its nodes, in node_list's order: the batch step's
    # SLURM_JOB_CPUS_PER_NODE and SLURM_TASKS_PER_NODE (None from an older controller).
    cpus_per_node: list[int] | None = None
    # What slurmd puts in the batch step's environment from the launch and the job's
    # credential: SLURM_MEM_PER_NODE / SLURM_MEM_PER_CPU (the request, MB),
    # SLURM_JOB_LICENSES, SLURM_JOB_RESERVATION, SLURM_JOB_START_TIME and
    # SLURM_JOB_END_TIME (epoch seconds). None: not asked for, or an older controller.
    mem_per_node: int | None = None
    mem_per_cpu: int | None = None
    licenses: str | None = None
    reservation: str | None = None
    start_time: int | None = None
    end_time: int | None = None


# -- the handshake -----------------------------------------------------------------


@dataclass(frozen=True)
class Hello(Message):
    """agent → controller, first: the node names let it choose which key to prove."""

    TYPE = "hello"
    agent_id: str
    nonce: str
    nodes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Challenge(Message):
    """controller → agent: its own proof of the key comes first."""

    TYPE = "challenge"
    nonce: str
    proof: str


@dataclass(frozen=True)
class Auth(Message):
    TYPE = "auth"
    proof: str


# -- agent → controller ------------------------------------------------------------


@dataclass(frozen=True)
class Register(Message):
    """Everything the controller must know after a connect: a reconnect restates it."""

    TYPE = "register"
    agent_id: str
    nodes: list[NodeInfo]
    running: list[RunningJob]
    completions: list[Completion]


@dataclass(frozen=True)
class Started(Message):
    TYPE = "started"
    job_id: int
    node: str
    pid: int
    time: float | None = None
    run: int | None = None


@dataclass(frozen=True)
class StartedBatch(Message):
    """Jobs started together (one launch burst): one message, one controller transaction,
    where a ``started`` each cost the controller a message and a transaction of its own."""

    TYPE = "started_batch"
    started: list[JobStart]


@dataclass(frozen=True)
class LaunchFailed(Message):
    TYPE = "launch_failed"
    job_id: int
    node: str
    error: str
    time: float | None = None
    run: int | None = None


@dataclass(frozen=True)
class Completed(Completion, Message):
    """One completion, its fields at the top level of the message."""

    TYPE = "completed"


@dataclass(frozen=True)
class CompletedBatch(Message):
    """Jobs that ended together: one message, one transaction at the controller."""

    TYPE = "completed_batch"
    completions: list[Completion]


@dataclass(frozen=True)
class Ping(Message):
    """A heartbeat. ``jobs``: the jobs the agent holds on these nodes (running, starting,
    ended but not yet reported), as slurmd's registration lists its jobs; a RUNNING job
    absent from it past BatchStartTimeout is missing from its batch node. ``seen``: how
    many controller frames the agent had received when it wrote the list, so a launch
    still on its way is not taken for a lost one. An agent without them (an earlier
    release) sends neither."""

    TYPE = "ping"
    time: float
    nodes: list[str]
    load: dict[str, NodeLoad] | None = None
    jobs: list[int] | None = None
    seen: int | None = None


@dataclass(frozen=True)
class Drain(Message):
    """The agent cannot keep its jobs safe (its spool is gone): drain these nodes."""

    TYPE = "drain"
    nodes: list[str]
    reason: str


@dataclass(frozen=True)
class PowerActionDone(Message):
    TYPE = "power_action_done"
    run_id: int
    node: str
    exit_code: int  # negative: killed by that signal; 127: not started or not configured
    end_time: float
    error: str  # empty unless it could not start


@dataclass(frozen=True)
class RebootDone(Message):
    """The node's RebootProgram ended (or could not start) and the agent lives on."""

    TYPE = "reboot_done"
    node: str
    exit_code: int  # negative: killed by that signal; 127: not started or not configured
    end_time: float
    error: str  # empty unless it could not start


@dataclass(frozen=True)
class PrologEpilog(Message):
    """slurm.conf's Prolog or Epilog on the job's node (agent/prolog.py): a Prolog that
    failed (the job did not start), an allocation Prolog that succeeded (``run_prolog``'s
    answer), or the Epilog's end, which ends the job's COMPLETING."""

    TYPE = "prolog_epilog"
    PROLOG_DONE = "prolog_done"
    PROLOG_FAILED = "prolog_failed"
    EPILOG_DONE = "epilog_done"
    EPILOG_FAILED = "epilog_failed"
    job_id: int
    node: str
    run: int
    what: str  # one of the three above
    error: str = ""  # why it failed, in words
    time: float | None = None
    # False: a failure that leaves the node up (hres/lua's ESLURM_HRES_REMOTE_FAIL, the
    # external service unavailable); absent from agents of an earlier release: drained.
    drain: bool = True

    def check(self, kind: str) -> None:
        if self.what not in (self.PROLOG_DONE, self.PROLOG_FAILED, self.EPILOG_DONE, self.EPILOG_FAILED):
            words = f"{self.PROLOG_DONE}, {self.PROLOG_FAILED}, {self.EPILOG_DONE} or {self.EPILOG_FAILED}"
            raise MessageError(kind, "what", f"must be {words}")


# -- controller → agent ------------------------------------------------------------


@dataclass(frozen=True)
class Registered(Message):
    TYPE = "registered"
    nodes: list[str]
    rejected: dict[str, str]  # node -> why
    kill: list[int]  # jobs no longer the agent's: killed without a completion
    ping_interval: float


@dataclass(frozen=True)
class Launch(Message):
    TYPE = "launch"
    job: dict[str, Any]  # a LaunchJob's wire form

    @classmethod
    def of(cls, job: LaunchJob) -> Launch:
        return cls(job=job.to_wire())


@dataclass(frozen=True)
class Signal(Message):
    TYPE = "signal"
    job_id: int
    signal: str  # "STOP", "CONT", "USR1", ...: to the job's whole process group


@dataclass(frozen=True)
class Notify(Message):
    """scontrol notify for a running batch job: the line goes to its stderr, in
    slurmstepd's words (``slurmstepd: error: <message>``)."""

    TYPE = "notify"
    job_id: int
    message: str


@dataclass(frozen=True)
class Cancel(Message):
    TYPE = "cancel"
    job_id: int
    kill_wait: float | None = None  # seconds from TERM to KILL; absent: KillWait's default
    # An allocation-only job released by its holder: the holder's command's exit code and
    # signal, recorded as the job's (salloc's slurm_complete_job); absent for a kill.
    exit_code: int | None = None
    exit_signal: int | None = None


@dataclass(frozen=True)
class Ack(Message):
    """Completions the controller has committed: the agent may forget them."""

    TYPE = "ack"
    job_ids: list[int]


@dataclass(frozen=True)
class PowerAction(Message):
    """Run a ``Location=slurmd`` PowerAction on ``node``: the agent runs it only if its
    own slurm.conf names it, by ``action`` or by ``argv`` (its Program, then the node)."""

    TYPE = "power_action"
    run_id: int
    node: str
    action: str | None = None
    argv: list[str] | None = None
    env: dict[str, str] | None = None

    def check(self, kind: str) -> None:
        if self.action is None and self.argv is None:
            raise MessageError(kind, "argv", "is missing (there is no action either)")


@dataclass(frozen=True)
class Reboot(Message):
    """``scontrol reboot``: run the agent's own RebootProgram for ``node`` (its slurm.conf's,
    never a program named here). The node is back when the agent registers again with a
    later boot time."""

    TYPE = "reboot"
    node: str


@dataclass(frozen=True)
class RunEpilog(Message):
    """Run slurm.conf's Epilog on ``node``, one of a multi-node job's nodes other than its
    batch host, whose agent saw no launch: the job ended (``exit_code``, ``signal``).
    ``job`` holds what the Epilog's environment names (user, node_list, partition...).
    The agent answers ``prolog_epilog`` (``epilog_done`` at once when it has no Epilog)."""

    TYPE = "run_epilog"
    job_id: int
    node: str
    run: int
    exit_code: int
    signal: int
    job: dict[str, Any]


@dataclass(frozen=True)
class StepLaunch(Message):
    """Start ``node``'s share of a job step's tasks (srun inside an allocation, docs/steps.md).

    ``tasks``: their global ids (SLURM_PROCID), ``cpu_ids``: which of the job's CPUs on the
    node (0 .. cpus_on_node-1) the step holds; ``io_*``: where srun listens and the step's
    key, proved, never sent, when the agent connects (slurmwords/step_io.py). ``job``: what
    the tasks' SLURM_JOB_* are made of (the keys of a launch's job, without the script).
    """

    TYPE = "step_launch"
    job_id: int
    step_id: int
    node: str
    node_index: int
    tasks: list[int]
    cpu_ids: list[int]
    ntasks: int
    node_list: str
    num_nodes: int
    tasks_per_node: str
    argv: list[str]
    environment: dict[str, str]
    work_dir: str
    job: dict[str, Any]
    io_host: str
    io_port: int
    io_key: str
    cpus_per_task: int | None = None
    std_out: str | None = None
    std_err: str | None = None
    std_in: str | None = None
    # sbatch --signal without B: (Slurm signals every step, never the batch shell): the
    # signal number and when to send it (epoch seconds, the job's limit less sig_time).
    warn_signal: int | None = None
    warn_at: float | None = None
    # srun --pty: task 0 runs on a pseudo-terminal of this size (the other tasks' output
    # and input are /dev/null, as srun's --pty sets them).
    pty: bool = False
    pty_rows: int | None = None
    pty_cols: int | None = None
    # srun -E: the tasks keep SLURM_NNODES, SLURM_NTASKS ... of ``environment`` (srun's);
    # None (not sent) when not asked for.
    preserve_env: bool | None = None
    # srun --multi-prog: this node's tasks' own argv, by task id (str); None: argv for all.
    task_argv: dict[str, list[str]] | None = None
    # srun --cpu-bind: "none" leaves each task the step's CPUs on the node (else its own
    # share, the binding's units or not); verbose: each task's stderr says its mask.
    cpu_bind: str | None = None
    cpu_bind_verbose: bool | None = None

    def check(self, kind: str) -> None:
        if not self.argv:
            raise MessageError(kind, "argv", "is empty")
        if self.task_argv is not None and (
            not isinstance(self.task_argv, dict)
            or any(
                not isinstance(v, list) or not v or not all(isinstance(a, str) for a in v)
                for v in self.task_argv.values()
            )
        ):
            raise MessageError(kind, "task_argv", "must map task ids to non-empty argv lists")


@dataclass(frozen=True)
class StepSignal(Message):
    """Signal a step's tasks on ``node`` (scancel JOBID.STEP, srun's Ctrl-C, the job's end)."""

    TYPE = "step_signal"
    job_id: int
    step_id: int
    node: str
    signal: str


@dataclass(frozen=True)
class StepDone(Message):
    """A step's tasks on ``node`` have all ended: the highest exit code, the signal that
    ended a task (0: none), ``error`` when they could not start."""

    TYPE = "step_done"
    job_id: int
    step_id: int
    node: str
    exit_code: int
    signal: int
    time: float
    error: str = ""
    # Each task's figures from its reaping (absent from an agent that does not read them).
    tasks: list[TaskEnd] | None = None


@dataclass(frozen=True)
class TaskEnd(Record):
    """One srun task's use as its reaping tells it (``wait4``'s rusage, as slurmstepd's):
    CPU seconds in user and system mode of the task and the descendants it waited for,
    the largest RSS of one of those processes (KiB; None when it is no larger than the
    agent's own, which the task's fork inherited before its exec) and their major page
    faults. A step shorter than the agent's sampling has no other figures."""

    task: int
    user_cpu_secs: float
    system_cpu_secs: float
    max_rss_kb: int | None
    pages: int


@dataclass(frozen=True)
class TaskUsage(Record):
    """One task's use, summed over its processes, as Slurm's jobacct_gather counts a task:
    the current value and the largest sampled since the task started (KiB, major page
    faults, CPU seconds, bytes read and written). The disk counters are None where the
    agent could not read the processes' /proc/PID/io."""

    task: int
    pids: list[int]
    rss_kb: int
    max_rss_kb: int
    vmem_kb: int
    max_vmem_kb: int
    pages: int
    max_pages: int
    cpu_secs: float
    read_bytes: int | None
    max_read_bytes: int | None
    write_bytes: int | None
    max_write_bytes: int | None
    # The CPU frequency its CPU time ran at, weighted by that time, as Slurm's jobacct_gather
    # reads it: the task's CPU's cpufreq/cpuinfo_cur_freq (kHz), else /proc/cpuinfo's first
    # "cpu MHz" (MHz: Slurm mixes the two). Absent from an agent that does not read it.
    cpu_freq: int | None = None


@dataclass(frozen=True)
class StepUsageRecord(Record):
    """A running step's tasks on one node; ``step`` is ``batch`` or the step's number."""

    job_id: int
    step: str
    node: str
    tasks: list[TaskUsage]


@dataclass(frozen=True)
class StepUsage(Message):
    """With each heartbeat: every step running on ``nodes`` and its tasks' use, the whole
    set (a step of these nodes not in it has ended), for sstat."""

    TYPE = "step_usage"
    time: float
    nodes: list[str]
    steps: list[StepUsageRecord]


@dataclass(frozen=True)
class RunProlog(Message):
    """PrologFlags=Alloc: run slurm.conf's Prolog on ``node``, one of a multi-node job's
    nodes other than its batch host, at allocation; the batch launch waits for every
    one's success. ``job`` is :class:`RunEpilog`'s. The agent answers ``prolog_epilog``
    (``prolog_done``, at once when it has no Prolog, or ``prolog_failed``), and answers
    a repeat of one it has run with the same result."""

    TYPE = "run_prolog"
    job_id: int
    node: str
    run: int
    job: dict[str, Any]


def _by_type(*classes: type[Message]) -> dict[str, type[Message]]:
    return {cls.TYPE: cls for cls in classes}


AGENT_MESSAGES = _by_type(
    Hello,
    Auth,
    Register,
    Started,
    StartedBatch,
    LaunchFailed,
    Completed,
    CompletedBatch,
    Ping,
    Drain,
    PowerActionDone,
    RebootDone,
    PrologEpilog,
    StepDone,
    StepUsage,
)
CONTROLLER_MESSAGES = _by_type(
    Challenge,
    Registered,
    Launch,
    Signal,
    Notify,
    Cancel,
    Ack,
    PowerAction,
    Reboot,
    RunEpilog,
    RunProlog,
    StepLaunch,
    StepSignal,
)
REGISTRY = {**AGENT_MESSAGES, **CONTROLLER_MESSAGES}


def decode(msg: object, registry: dict[str, type[Message]] = REGISTRY) -> Message:
    """The message ``msg`` (a JSON object) is; ``registry`` limits it to one direction."""
    return wire.decode(msg, registry)
