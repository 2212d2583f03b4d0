"""A request as Slurm's ``job_desc`` (the table ``slurm_job_submit`` and
``slurm_job_modify`` get and may change), the changes made to it back into the request,
and the ``part_list`` and ``job_rec`` tables; pure.

fsched's requests carry sbatch's options as text (``"nodes": "2-4"``, ``"time": "1:00:00"``,
``"gres": "gpu:2"``); job_desc has Slurm's fields (``min_nodes = 2``, ``max_nodes = 4``,
``time_limit = 60``, ``tres_per_node = "gres/gpu:2"``).  A field the request does not set
reads as Slurm's unset value: nil for text, ``slurm.NO_VAL`` (``NO_VAL16`` for
cpus_per_task and ntasks_per_node) for numbers, as slurm_init_job_desc_msg leaves them.
Only the fields a script changed go back into the request, which is then checked as any
request is: a script cannot make a request valid that a user could not send.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from luaplug.codes import INFINITE, NO_VAL, NO_VAL16
from slurmwords import durations

# job_desc text field -> the request's field.
TEXT_FIELDS = {
    "account": "account",
    "partition": "partition",
    "qos": "qos",
    "name": "name",
    "comment": "comment",
    "work_dir": "work_dir",
    "licenses": "licenses",
    "features": "constraint",
    "reservation": "reservation",
    "wckey": "wckey",
    "dependency": "dependency",
    "std_out": "output",
    "std_err": "error",
    "std_in": "input",
    "script": "script",
}
# job_desc count field -> (the request's field, the unset value).
COUNT_FIELDS = {
    "num_tasks": ("ntasks", NO_VAL),
    "cpus_per_task": ("cpus_per_task", NO_VAL16),
    "ntasks_per_node": ("ntasks_per_node", NO_VAL16),
}
# GRES per job, socket and task come from --gpus, --gpus-per-socket and --gpus-per-task,
# which fsched's sbatch does not take: they read nil and a script cannot set them.
UNSUPPORTED = ("tres_per_job", "tres_per_socket", "tres_per_task")
READ_ONLY = ("user_id", "user_name", "group_id")
# The fields of scontrol update a modify's job_desc carries -> the change's field.
MODIFY_TEXT = {"partition": "partition", "name": "name", "licenses": "licenses", "dependency": "dependency"}

_NODES_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


class DescError(ValueError):
    """A value a script wrote that cannot go back into the request."""


@dataclass(frozen=True)
class Identity:
    """Who the job is for: user_id is the uid of that login on the controller's host,
    absent (nil) for an fsched account with no local login."""

    user_name: str
    user_id: int | None = None
    group_id: int | None = None


def _text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | str):
        text = str(value)
        return text if text != "" else None
    return None


def _minutes(value: Any) -> int:
    """sbatch -t as job_desc.time_limit: minutes, INFINITE for no limit, NO_VAL unset."""
    text = _text(value)
    if text is None:
        return NO_VAL
    try:
        minutes = durations.parse_job_time_limit(text)
    except ValueError:
        return NO_VAL  # refused when the request is checked
    return INFINITE if minutes is None else minutes


def _count(value: Any, unset: int) -> int:
    text = _text(value)
    if text is None or not text.strip().isdigit():
        return unset
    return int(text)


def tres_per_node(gres: str | None) -> str | None:
    """``--gres=gpu:2,gpu:tesla:1`` as Slurm's tres_per_node: ``gres/gpu:2,gres/gpu:tesla:1``."""
    if not gres:
        return None
    return ",".join("gres/" + item.strip() for item in gres.split(",") if item.strip())


def gres_of(tres: str) -> str:
    """tres_per_node back as ``--gres``: each item ``gres/NAME...`` (Slurm's form), or a
    bare ``NAME...`` as Slurm's setter of ``job_desc.gres`` takes it."""
    items = []
    for raw in tres.split(","):
        item = raw.strip()
        if not item:
            continue
        kind, slash, rest = item.partition("/")
        if slash and kind != "gres":
            raise DescError(f"tres_per_node: only gres/ TRES can be requested per node, not {item!r}")
        items.append(rest if slash else item)
    return ",".join(items)


def job_desc(spec: Mapping[str, Any], who: Identity) -> dict[str, Any]:
    """A submission's request as job_desc."""
    desc: dict[str, Any] = {name: _text(spec.get(field)) for name, field in TEXT_FIELDS.items()}
    desc["time_limit"] = _minutes(spec.get("time"))
    low, high = NO_VAL, NO_VAL
    nodes = _text(spec.get("nodes"))
    if nodes is not None and (match := _NODES_RE.match(nodes)):
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else NO_VAL
    desc["min_nodes"], desc["max_nodes"] = low, high
    for name, (field, unset) in COUNT_FIELDS.items():
        desc[name] = _count(spec.get(field), unset)
    desc["tres_per_node"] = tres_per_node(_text(spec.get("gres")))
    desc["user_name"] = who.user_name
    desc["user_id"] = who.user_id
    desc["group_id"] = who.group_id
    return {k: v for k, v in desc.items() if v is not None}


def _number(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 0:
        raise DescError(f"{name} must be a non-negative whole number, not {value!r}")
    return int(value)


def changed_spec(
    spec: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The request with the script's changes to job_desc (``before`` -> ``after``), and
    the fields it set that cannot be applied (read-only, unsupported or unknown), which
    Slurm logs as it ignores them."""
    out = dict(spec)
    ignored: list[str] = []
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    for name in sorted(changed):
        value = after.get(name)
        if name in TEXT_FIELDS:
            if value is not None and (isinstance(value, bool) or not isinstance(value, str | int | float)):
                raise DescError(f"{name} must be a string, not {value!r}")
            text = None if value is None else str(value)
            # As Slurm's setter: an empty string unsets the field.
            out[TEXT_FIELDS[name]] = text or None
        elif name == "time_limit":
            out["time"] = _time_text(None if value is None else _number(name, value))
        elif name in ("min_nodes", "max_nodes"):
            continue  # together below
        elif name in COUNT_FIELDS:
            field, unset = COUNT_FIELDS[name]
            number = unset if value is None else _number(name, value)
            out[field] = None if number == unset else str(number)
        elif name == "tres_per_node":
            if value is not None and not isinstance(value, str):
                raise DescError(f"tres_per_node must be a string, not {value!r}")
            out["gres"] = gres_of(value) if value else None
        else:
            ignored.append(name)
    if changed & {"min_nodes", "max_nodes"}:
        low = after.get("min_nodes")
        high = after.get("max_nodes")
        low = NO_VAL if low is None else _number("min_nodes", low)
        high = NO_VAL if high is None else _number("max_nodes", high)
        if low == NO_VAL:
            out["nodes"] = None if high == NO_VAL else f"1-{high}"
        else:
            out["nodes"] = str(low) if high in (NO_VAL, INFINITE) or high == low else f"{low}-{high}"
    return {k: v for k, v in out.items() if v is not None}, ignored


def _time_text(minutes: int | None) -> str | None:
    if minutes is None or minutes == NO_VAL:
        return None
    if minutes == INFINITE:
        return durations.UNLIMITED
    return str(minutes)


def modify_desc(changes: Mapping[str, Any]) -> dict[str, Any]:
    """scontrol update's changes as the job_desc of slurm_job_modify: only the fields
    being updated are set (as scontrol sends them)."""
    desc: dict[str, Any] = {name: _text(changes.get(field)) for name, field in MODIFY_TEXT.items()}
    desc["time_limit"] = _modify_minutes(changes.get("time_limit"))
    nice = _text(changes.get("nice"))
    desc["nice"] = int(nice) + 0x80000000 if nice is not None and _is_int(nice) else NO_VAL
    return {k: v for k, v in desc.items() if v is not None}


def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def _modify_minutes(value: Any) -> int:
    text = _text(value)
    if text is None:
        return NO_VAL
    try:
        minutes = durations.parse_time_limit(text)
    except ValueError:
        return NO_VAL
    return INFINITE if minutes is None else minutes


def changed_modify(
    changes: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """scontrol update's changes with the script's own; fields scontrol update cannot
    change are returned as ignored."""
    out = dict(changes)
    ignored: list[str] = []
    for name in sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)):
        value = after.get(name)
        if name in MODIFY_TEXT:
            if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
                raise DescError(f"{name} must be a string, not {value!r}")
            if value is None:
                out.pop(MODIFY_TEXT[name], None)
            else:
                out[MODIFY_TEXT[name]] = str(value)
        elif name == "time_limit":
            text = _time_text(None if value is None else _number(name, value))
            if text is None:
                out.pop("time_limit", None)
            else:
                out["time_limit"] = text
        elif name == "nice":
            number = NO_VAL if value is None else _number(name, value)
            if number == NO_VAL:
                out.pop("nice", None)
            else:
                out["nice"] = number - 0x80000000
        else:
            ignored.append(name)
    return out, ignored


# Slurm's partition state_up values (PARTITION_UP, _DOWN, _DRAIN, _INACTIVE).
_STATE_UP = {"UP": 3, "DOWN": 1, "DRAIN": 2, "INACTIVE": 0}
# Slurm's job_state numbers (enum job_states), for job_rec.job_state.
JOB_STATES = {
    "PENDING": 0, "RUNNING": 1, "SUSPENDED": 2, "COMPLETED": 3, "CANCELLED": 4, "FAILED": 5,
    "TIMEOUT": 6, "NODE_FAIL": 7, "PREEMPTED": 8, "BOOT_FAIL": 9, "DEADLINE": 10, "OUT_OF_MEMORY": 11,
}  # fmt: skip


@dataclass(frozen=True)
class PartitionInfo:
    name: str
    nodes: str
    total_nodes: int
    is_default: bool
    state: str
    max_time: int | None
    default_time: int | None
    max_nodes: int | None
    min_nodes: int
    priority_tier: int
    priority_job_factor: int


def part_entry(p: PartitionInfo) -> dict[str, Any]:
    """One entry of part_list, by Slurm's part_record field names."""
    return {
        "name": p.name,
        "nodes": p.nodes or None,
        "total_nodes": p.total_nodes,
        "flag_default": 1 if p.is_default else 0,
        "state_up": _STATE_UP.get(p.state, 0),
        "max_time": INFINITE if p.max_time is None else p.max_time,
        "default_time": NO_VAL if p.default_time is None else p.default_time,
        "max_nodes": INFINITE if p.max_nodes is None else p.max_nodes,
        "min_nodes": p.min_nodes,
        "priority_tier": p.priority_tier,
        "priority_job_factor": p.priority_job_factor,
    }
