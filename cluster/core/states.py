"""Node and job states as Slurm spells them.

Pure module (no Django): shared by the models, the scheduler core, the API
serialisers and the console.  A node has one *base* state and a set of
*flags*; ``sinfo`` and ``scontrol`` print them in different ways
(``IDLE+DRAIN`` long, ``drain`` short, ``idle~`` with a power suffix), and
those spellings are built here and only here.
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
    REBOOT_REQUESTED = 1 << 10
    INVALID_REG = 1 << 11
    RESERVED = 1 << 12
    PLANNED = 1 << 13
    MAINTENANCE = 1 << 14
    POWER_DRAIN = 1 << 15  # the DRAIN was set by POWER_DOWN_ASAP (internal, not printed)


# Order in which flags are appended to the long name (as scontrol prints them).
_LONG_FLAG_ORDER = (
    NodeFlag.CLOUD,
    NodeFlag.COMPLETING,
    NodeFlag.DRAIN,
    NodeFlag.DYNAMIC,
    NodeFlag.INVALID_REG,
    NodeFlag.MAINTENANCE,
    NodeFlag.NOT_RESPONDING,
    NodeFlag.PLANNED,
    NodeFlag.POWER_DOWN,
    NodeFlag.POWERED_DOWN,
    NodeFlag.POWERING_DOWN,
    NodeFlag.POWERING_UP,
    NodeFlag.POWER_UP,
    NodeFlag.REBOOT_REQUESTED,
    NodeFlag.RESERVED,
)

# Suffix characters sinfo appends to the short state; first match wins, the
# same precedence as Slurm's node_state_string_compact().
_SUFFIXES = (
    (NodeFlag.NOT_RESPONDING, "*"),
    (NodeFlag.POWERING_DOWN, "%"),
    (NodeFlag.POWER_DOWN, "!"),
    (NodeFlag.POWERED_DOWN, "~"),
    (NodeFlag.POWERING_UP, "#"),
)

_SHORT_BASE = {
    NodeBase.UNKNOWN: "unk",
    NodeBase.IDLE: "idle",
    NodeBase.MIXED: "mix",
    NodeBase.ALLOCATED: "alloc",
    NodeBase.DOWN: "down",
    NodeBase.FUTURE: "futr",
}


def flag_names(flags: int) -> list[str]:
    return [f.name for f in _LONG_FLAG_ORDER if flags & f]


def drain_word(base: NodeBase, flags: int) -> str | None:
    """DRAINED when nothing runs any more, DRAINING while jobs still do."""
    if not flags & NodeFlag.DRAIN:
        return None
    if base in (NodeBase.ALLOCATED, NodeBase.MIXED) or flags & NodeFlag.COMPLETING:
        return "DRAINING"
    return "DRAINED"


def long_state(base: NodeBase | str, flags: int) -> str:
    """State as ``scontrol show node`` prints it: ``IDLE+CLOUD+POWERED_DOWN``."""
    base = NodeBase(base)
    return "+".join([base.value, *flag_names(flags)])


def sinfo_long(base: NodeBase | str, flags: int) -> str:
    """``sinfo %T``: ``idle``, ``drained``, ``mixed``, ``allocated``, plus suffix."""
    base = NodeBase(base)
    word = drain_word(base, flags)
    if word is None:
        word = {NodeBase.MIXED: "mixed", NodeBase.ALLOCATED: "allocated", NodeBase.FUTURE: "future"}.get(
            base, base.value.lower()
        )
        if flags & NodeFlag.COMPLETING and base is not NodeBase.DOWN:
            word = "completing"
    else:
        word = word.lower()
    return word + suffix(flags)


def sinfo_short(base: NodeBase | str, flags: int) -> str:
    """``sinfo %t``: ``idle``, ``drain``, ``drng``, ``mix``, ``alloc``, ``down*``, ``idle~``."""
    base = NodeBase(base)
    word = drain_word(base, flags)
    if word == "DRAINED":
        short = "drain"
    elif word == "DRAINING":
        short = "drng"
    elif flags & NodeFlag.COMPLETING and base is not NodeBase.DOWN:
        short = "comp"
    else:
        short = _SHORT_BASE[base]
    return short + suffix(flags)


def suffix(flags: int) -> str:
    for flag, char in _SUFFIXES:
        if flag and flags & flag:
            return char
    return ""


def is_usable(base: NodeBase | str, flags: int) -> bool:
    """Whether the scheduler may place new work on the node (power states aside)."""
    base = NodeBase(base)
    if base in (NodeBase.DOWN, NodeBase.FUTURE):
        return False
    return not flags & (
        NodeFlag.DRAIN | NodeFlag.NOT_RESPONDING | NodeFlag.POWER_DOWN | NodeFlag.POWERING_DOWN
    )


class JobState(enum.StrEnum):
    PENDING = "PENDING"
    CONFIGURING = "CONFIGURING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
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
    {JobState.PENDING, JobState.CONFIGURING, JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING}
)
# States in which a job holds node resources.
HOLDING_JOB_STATES = frozenset(
    {JobState.CONFIGURING, JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING}
)
FINISHED_JOB_STATES = frozenset(set(JobState) - ACTIVE_JOB_STATES - {JobState.REQUEUED})

# squeue %t compact codes.
JOB_STATE_COMPACT = {
    JobState.PENDING: "PD",
    JobState.CONFIGURING: "CF",
    JobState.RUNNING: "R",
    JobState.SUSPENDED: "S",
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
    # Slurm's codes for --dependency, which fsched does not take yet: the explainer and the
    # commands already print them as Slurm does.
    DEPENDENCY = "Dependency"
    DEPENDENCY_NEVER_SATISFIED = "DependencyNeverSatisfied"
