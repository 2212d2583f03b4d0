"""Node and job states as Slurm spells them.

Pure module (no Django): shared by the models, the scheduler core, the API
serialisers and the console.  A node has one *base* state and a set of
*flags*; ``sinfo`` and ``scontrol`` print them in different ways
(``IDLE+DRAIN`` long, ``drain`` short, ``idle~`` with a power suffix), and
those spellings are built here and only here, after Slurm's sinfo(1) NODE STATE
CODES and their precedence.
"""

from __future__ import annotations

import enum


class NodeBase(enum.StrEnum):
    UNKNOWN = "UNKNOWN"
    IDLE = "IDLE"
    MIXED = "MIXED"
    ALLOCATED = "ALLOCATED"
    DOWN = "DOWN"
    FUTURE = "FUTURE"


class NodeFlag(enum.IntFlag):
    """Flags stored as a bitmask on Node.flags.  Values are persisted: append only."""

    NONE = 0
    DRAIN = 1 << 0
    NOT_RESPONDING = 1 << 1
    CLOUD = 1 << 2
    COMPLETING = 1 << 3
    POWER_DOWN = 1 << 4  # requested (!)
    POWER_UP = 1 << 5  # requested
    POWERED_DOWN = 1 << 6  # ~
    POWERING_DOWN = 1 << 7  # %
    POWERING_UP = 1 << 8  # #
    DYNAMIC = 1 << 9
    REBOOT_REQUESTED = 1 << 10  # @: scontrol reboot, waiting for the node to be idle
    INVALID_REG = 1 << 11
    RESERVED = 1 << 12
    PLANNED = 1 << 13  # -: backfill holds the node for a pending job
    MAINTENANCE = 1 << 14  # $: in an active reservation with Flags=MAINT
    POWER_DRAIN = 1 << 15  # the DRAIN was set by POWER_DOWN_ASAP (internal, not printed)
    REBOOT_ISSUED = 1 << 16  # ^: the agent was told to reboot the node (scontrol reboot)


# Order in which flags are appended to the long name (``scontrol show node``'s State=):
# Slurm's node_state_string_complete() walks its flag table in this order.
_LONG_FLAG_ORDER = (
    NodeFlag.CLOUD,
    NodeFlag.COMPLETING,
    NodeFlag.DRAIN,
    NodeFlag.DYNAMIC,
    NodeFlag.INVALID_REG,
    NodeFlag.MAINTENANCE,
    NodeFlag.POWER_DOWN,
    NodeFlag.POWER_UP,
    NodeFlag.POWERED_DOWN,
    NodeFlag.REBOOT_REQUESTED,
    NodeFlag.REBOOT_ISSUED,
    NodeFlag.RESERVED,
    NodeFlag.NOT_RESPONDING,
    NodeFlag.PLANNED,
    NodeFlag.POWERING_UP,
    NodeFlag.POWERING_DOWN,
)

# The one suffix sinfo appends to a state (sinfo(1), NODE STATE CODES), first match wins:
# Slurm's precedence when flags combine is $ ^ @ # % ~ ! *.
SUFFIXES = (
    (NodeFlag.MAINTENANCE, "$"),  # in a maintenance reservation
    (NodeFlag.REBOOT_ISSUED, "^"),  # reboot issued
    (NodeFlag.REBOOT_REQUESTED, "@"),  # reboot pending
    (NodeFlag.POWERING_UP, "#"),  # powering up or being configured
    (NodeFlag.POWERING_DOWN, "%"),  # powering down
    (NodeFlag.POWERED_DOWN, "~"),  # powered off
    (NodeFlag.POWER_DOWN, "!"),  # power down pending
    (NodeFlag.NOT_RESPONDING, "*"),  # not responding
)
# "-" is not a suffix of that list: only an idle or mixed node planned by backfill shows
# it (``mix-``; an idle one reads ``plnd``), and only when no other suffix applies.
PLANNED_SUFFIX = "-"
_REBOOTING = NodeFlag.REBOOT_REQUESTED | NodeFlag.REBOOT_ISSUED
_BUSY = (NodeBase.ALLOCATED, NodeBase.MIXED)

# (short, long) words of each base state, as sinfo %t and %T print them.
_BASE_WORDS = {
    NodeBase.UNKNOWN: ("unk", "unknown"),
    NodeBase.IDLE: ("idle", "idle"),
    NodeBase.MIXED: ("mix", "mixed"),
    NodeBase.ALLOCATED: ("alloc", "allocated"),
    NodeBase.DOWN: ("down", "down"),
    NodeBase.FUTURE: ("futr", "future"),
}


# The same as plain ints and names: an IntFlag operation costs a Python call and a new
# member, and these run for every node of every listing and pass.
_LONG_FLAG_BITS = tuple((int(f), str(f.name)) for f in _LONG_FLAG_ORDER)
_DYNAMIC = int(NodeFlag.DYNAMIC)


def flag_names(flags: int, base: NodeBase | str | None = None) -> list[str]:
    """The flags' names in Slurm's order; a dynamic node's flag is DYNAMIC_FUTURE while it
    is FUTURE and DYNAMIC_NORM once it is not (with no ``base``: DYNAMIC_NORM)."""
    if not flags:
        return []
    names = []
    for bit, name in _LONG_FLAG_BITS:
        if flags & bit:
            if bit == _DYNAMIC:
                names.append("DYNAMIC_FUTURE" if base == NodeBase.FUTURE else "DYNAMIC_NORM")
            else:
                names.append(name)
    return names


def drain_word(base: NodeBase, flags: int) -> str | None:
    """DRAINED when nothing runs any more, DRAINING while jobs still do."""
    if not flags & NodeFlag.DRAIN:
        return None
    if base in _BUSY or flags & NodeFlag.COMPLETING:
        return "DRAINING"
    return "DRAINED"


def long_state(base: NodeBase | str, flags: int) -> str:
    """State as ``scontrol show node`` prints it: ``IDLE+CLOUD+POWERED_DOWN``."""
    base = NodeBase(base)
    return "+".join([base.value, *flag_names(flags, base)])


def sinfo_long(base: NodeBase | str, flags: int) -> str:
    """``sinfo %T``: ``idle``, ``drained``, ``mixed-``, ``reboot^``, ``maint``, ``idle~``."""
    return _sinfo_state(NodeBase(base), flags, short=False)


def sinfo_short(base: NodeBase | str, flags: int) -> str:
    """``sinfo %t``: ``idle``, ``drain``, ``drng@``, ``mix-``, ``boot^``, ``down*``, ``idle~``."""
    return _sinfo_state(NodeBase(base), flags, short=True)


def _sinfo_state(base: NodeBase, flags: int, *, short: bool) -> str:
    """The state word and its one suffix, with the precedence of Slurm's
    node_state_string_compact() (%t) and node_state_string() (%T).

    Some flags replace the word instead of adding a suffix: an invalid registration
    (``inval``), a maintenance reservation on a node that is neither busy, down nor
    drained (``maint``), a pending or issued reboot of a node that is not busy
    (``boot``/``boot^``, long ``reboot``/``reboot^``), and backfill's plan on an idle
    node (``plnd``).
    """

    def word(s: str, long: str) -> str:
        return s if short else long

    if flags & NodeFlag.INVALID_REG:
        return "inval"
    responding = "*" if flags & NodeFlag.NOT_RESPONDING else ""
    if flags & NodeFlag.MAINTENANCE and not (flags & NodeFlag.DRAIN or base in (*_BUSY, NodeBase.DOWN)):
        return "maint" + responding
    if flags & _REBOOTING and base not in _BUSY:
        if flags & NodeFlag.REBOOT_ISSUED:
            return word("boot", "reboot") + "^"
        return word("boot", "reboot") + responding
    end = suffix(flags)
    drained = drain_word(base, flags)
    if drained == "DRAINING":
        return word("drng", "draining") + end
    if drained == "DRAINED":
        return word("drain", "drained") + end
    if base is NodeBase.DOWN:
        return "down" + end
    if base is NodeBase.ALLOCATED:
        # Jobs still running while others complete: Slurm's "+" (alloc+).
        return word("alloc", "allocated") + (end or ("+" if flags & NodeFlag.COMPLETING else ""))
    if flags & NodeFlag.COMPLETING:
        return word("comp", "completing") + end
    if base is NodeBase.IDLE and not end:
        if flags & NodeFlag.RESERVED:
            return word("resv", "reserved")
        if flags & NodeFlag.PLANNED:
            return word("plnd", "planned")
    if base is NodeBase.MIXED and not end and flags & NodeFlag.PLANNED:
        end = PLANNED_SUFFIX
    if base is NodeBase.UNKNOWN:
        end = responding  # Slurm gives an unknown node no suffix but "*"
    s, long = _BASE_WORDS[base]
    return word(s, long) + end


def suffix(flags: int) -> str:
    """The one suffix of sinfo's list that the flags earn (``""`` when none)."""
    for flag, char in SUFFIXES:
        if flags & flag:
            return char
    return ""


def is_usable(base: NodeBase | str, flags: int) -> bool:
    """Whether the scheduler may place new work on the node (power states aside)."""
    if base in _UNUSABLE_BASES:
        return False
    if base not in _BASES:
        NodeBase(base)  # ValueError: not a base state
    return not flags & UNUSABLE_FLAGS


# is_usable's tests as plain values (a base's value hashes and compares as its text).
_BASES = frozenset(b.value for b in NodeBase)
_UNUSABLE_BASES = frozenset({NodeBase.DOWN.value, NodeBase.FUTURE.value})
UNUSABLE_FLAGS = int(NodeFlag.DRAIN | NodeFlag.NOT_RESPONDING | NodeFlag.POWER_DOWN | NodeFlag.POWERING_DOWN)


class JobState(enum.StrEnum):
    PENDING = "PENDING"
    CONFIGURING = "CONFIGURING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    # Slurm's STOPPED: the processes got SIGSTOP but keep their allocation and CPUs (the
    # load thresholds stop jobs so); squeue shows ST.
    STOPPED = "STOPPED"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    REQUEUED = "REQUEUED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"


ACTIVE_JOB_STATES = frozenset(
    {
        JobState.PENDING,
        JobState.CONFIGURING,
        JobState.RUNNING,
        JobState.SUSPENDED,
        JobState.STOPPED,
        JobState.COMPLETING,
    }
)
# States in which a job holds node resources.
HOLDING_JOB_STATES = frozenset(
    {JobState.CONFIGURING, JobState.RUNNING, JobState.SUSPENDED, JobState.STOPPED, JobState.COMPLETING}
)
# States whose time does not count against the time limit (Slurm's suspended time).
PAUSED_JOB_STATES = frozenset({JobState.SUSPENDED, JobState.STOPPED})
FINISHED_JOB_STATES = frozenset(set(JobState) - ACTIVE_JOB_STATES - {JobState.REQUEUED})

# squeue %t compact codes.
JOB_STATE_COMPACT = {
    JobState.PENDING: "PD",
    JobState.CONFIGURING: "CF",
    JobState.RUNNING: "R",
    JobState.SUSPENDED: "S",
    JobState.STOPPED: "ST",
    JobState.COMPLETING: "CG",
    JobState.COMPLETED: "CD",
    JobState.FAILED: "F",
    JobState.CANCELLED: "CA",
    JobState.TIMEOUT: "TO",
    JobState.NODE_FAIL: "NF",
    JobState.PREEMPTED: "PR",
    JobState.REQUEUED: "RQ",
    JobState.BOOT_FAIL: "BF",
    JobState.DEADLINE: "DL",
    JobState.OUT_OF_MEMORY: "OOM",
}


class Reason(enum.StrEnum):
    """Pending reason codes, spelled as squeue prints them."""

    NONE = "None"
    PRIORITY = "Priority"
    RESOURCES = "Resources"
    PARTITION_NODE_LIMIT = "PartitionNodeLimit"
    PARTITION_TIME_LIMIT = "PartitionTimeLimit"
    PARTITION_DOWN = "PartitionDown"
    PARTITION_INACTIVE = "PartitionInactive"
    REQ_NODE_NOT_AVAIL = "ReqNodeNotAvail"
    JOB_HELD_USER = "JobHeldUser"
    JOB_HELD_ADMIN = "JobHeldAdmin"
    BEGIN_TIME = "BeginTime"
    LICENSES = "Licenses"
    HRES_DISABLED = "HRESDisabled"
    RESERVATION = "Reservation"
    NODE_DOWN = "NodeDown"
    BAD_CONSTRAINTS = "BadConstraints"
    INVALID_ACCOUNT = "InvalidAccount"
    INVALID_QOS = "InvalidQOS"
    JOB_LAUNCH_FAILURE = "JobLaunchFailure"
    NON_ZERO_EXIT_CODE = "NonZeroExitCode"
    TIME_LIMIT = "TimeLimit"
    NODE_FAIL = "NodeFail"
    # Slurm's FAIL_OOM: the job of an OUT_OF_MEMORY end.
    OUT_OF_MEMORY = "OutOfMemory"
    # Slurm's FAIL_DEADLINE: the reason of a job that could no longer end by its --deadline.
    DEADLINE = "DeadLine"
    # Slurm's codes for --dependency (cluster.core.dependencies).
    DEPENDENCY = "Dependency"
    DEPENDENCY_NEVER_SATISFIED = "DependencyNeverSatisfied"
