"""``scontrol show job|node|partition [NAME] --json``: the API's records in Slurm 23.11's
shape (data_parser v0.0.40's OPENAPI_JOB_INFO_RESP, OPENAPI_NODES_RESP and
OPENAPI_PARTITION_RESP; the NODE and PARTITION_INFO parsers' keys in their order).

A key fsched keeps no value for has the value Slurm prints for a field never set: ``""``
for a string, the NO_VAL form ``{"set": false, ...}``, ``[]`` for a flag list, ``{}`` for
a missing sub-record."""

from __future__ import annotations

from slurmwords import data_parser as dp


def put(obj: dict, path: str, value: object) -> None:
    """Set ``a/b/c`` as nested keys: the parsers name a sub-object's fields by such paths,
    and the first path into a sub-object places it."""
    *parents, last = path.split("/")
    for key in parents:
        obj = obj.setdefault(key, {})
    obj[last] = value


def nested(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for path, value in pairs:
        put(out, path, value)
    return out


def node_state(node: dict) -> list[str]:
    """NODE_STATES: the base state, then each flag."""
    return [node.get("base_state") or "UNKNOWN", *(node.get("flags") or [])]


def _next_state(node: dict) -> list[str]:
    """next_state is NO_VAL (INVALID) unless a reboot was told where to go."""
    word = node.get("next_state") or ""
    if word == "DOWN":
        return ["DOWN"]
    if word == "RESUME":
        return ["UNKNOWN", "RESUME"]
    return ["INVALID"]


NO_VAL = 0xFFFFFFFE


def cpu_load(load: float | None) -> int:
    """slurmd reports the load average times 100; a node that never reported keeps NO_VAL."""
    return NO_VAL if load is None else round(float(load) * 100)


def hostname(node: dict) -> str:
    """The host of the node's agent (its id is ``host:spool``), as scontrol's NodeHostName=."""
    return (node.get("agent") or "").partition(":")[0] or (node.get("name") or "")


def node(obj: dict, port: int = 0) -> dict:
    """One API node as data_parser v0.0.40's NODE; ``port`` is slurm.conf's SlurmdPort."""
    host = hostname(obj)
    cpus = obj.get("cpus") or 0
    load = obj.get("cpu_load")
    free = obj.get("free_mem")
    return {
        "architecture": dp.text(obj.get("arch")),
        "burstbuffer_network_address": "",
        "boards": 1,
        "boot_time": dp.timestamp(obj.get("boot_time")),
        "cluster_name": "",
        "cores": obj.get("cores_per_socket") or 1,
        "specialized_cores": 0,
        "cpu_binding": 0,
        "cpu_load": cpu_load(load),
        "free_mem": dp.no_val(free),
        "cpus": cpus,
        "effective_cpus": cpus,
        "specialized_cpus": "",
        "energy": {
            "average_watts": 0,
            "base_consumed_energy": 0,
            "consumed_energy": 0,
            "current_watts": dp.no_val(None),
            "previous_consumed_energy": 0,
            "last_collected": 0,
        },
        "external_sensors": {
            "consumed_energy": dp.no_val(None),
            "temperature": dp.no_val(None),
            "energy_update_time": 0,
            "current_watts": 0,
        },
        "extra": dp.text(obj.get("extra")),
        # power_mgmt_data_unpack gives every node one, its cap NO_VAL when the node has none.
        "power": {
            "maximum_watts": dp.no_val(None),
            "current_watts": 0,
            "total_energy": 0,
            "new_maximum_watts": 0,
            "peak_watts": 0,
            "lowest_watts": 0,
            "new_job_time": dp.timestamp(None),
            "state": 0,
            "time_start_day": 0,
        },
        "features": dp.csv(obj.get("features")),
        "active_features": dp.csv(obj.get("active_features")),
        "gres": dp.text(obj.get("gres")),
        "gres_drained": "N/A",
        "gres_used": dp.text(obj.get("gres_used")),
        "instance_id": dp.text(obj.get("instance_id")),
        "instance_type": dp.text(obj.get("instance_type")),
        "last_busy": dp.timestamp(obj.get("last_busy")),
        "mcs_label": "",
        "specialized_memory": 0,
        "name": dp.text(obj.get("name")),
        "next_state_after_reboot": _next_state(obj),
        "address": dp.text(obj.get("name")),
        "hostname": host,
        "state": node_state(obj),
        "operating_system": dp.text(obj.get("os")),
        "owner": "",
        "partitions": list(obj.get("partitions") or []),
        "port": port,
        "real_memory": obj.get("real_memory") or 0,
        "comment": "",
        "reason": dp.text(obj.get("reason")),
        "reason_changed_at": dp.timestamp(obj.get("reason_time")),
        "reason_set_by_user": dp.text(obj.get("reason_user")),
        "resume_after": dp.timestamp(None),
        "reservation": "",
        "alloc_memory": obj.get("alloc_memory") or 0,
        "alloc_cpus": obj.get("cpus_alloc") or 0,
        "alloc_idle_cpus": cpus - (obj.get("cpus_alloc") or 0),
        "tres_used": dp.text(obj.get("alloc_tres")),
        "tres_weighted": 0.0,
        "slurmd_start_time": dp.timestamp(obj.get("slurmd_start_time")),
        "sockets": obj.get("sockets") or 1,
        "threads": obj.get("threads_per_core") or 1,
        "temporary_disk": obj.get("tmp_disk") or 0,
        "weight": obj.get("weight") or 1,
        "tres": dp.text(obj.get("cfg_tres")),
        "version": dp.text(obj.get("slurmd_version")),
    }


def _listed(extra: dict, key: str) -> str:
    """An Allow*/Deny* list of slurm.conf; ALL is a NULL list in Slurm's record."""
    value = str(extra.get(key) or "")
    return "" if value.upper() == "ALL" else value


def _minutes(value: object) -> dict:
    """A partition's time in minutes: None is UNLIMITED (INFINITE)."""
    return dp.no_val(value, infinite=value is None)


def _count_limit(extra: dict, key: str) -> dict:
    value = str(extra.get(key) or "UNLIMITED")
    return dp.no_val(int(value)) if value.isdigit() else dp.no_val(None, infinite=True)


def _optional(extra: dict, key: str) -> dict:
    """A partition's SuspendTime=, ResumeTimeout=, SuspendTimeout=, OverTimeLimit=: unset
    (NO_VAL) when slurm.conf does not say, INFINITE for its words of no limit."""
    value = str(extra.get(key) or "").upper()
    if value.isdigit():
        return dp.no_val(int(value))
    if value in ("INFINITE", "UNLIMITED", "NONE", "-1"):
        return dp.no_val(None, infinite=True)
    return dp.no_val(None)


# OverSubscribe='s job count and flags (max_share, SHARED_FORCE): NO is one job a resource,
# EXCLUSIVE none, YES and FORCE four unless a count follows (slurm.conf(5)).
_FORCE = 0x8000


def _max_share(extra: dict) -> int:
    word, _, count = str(extra.get("OverSubscribe") or "NO").upper().partition(":")
    jobs = int(count) if count.isdigit() else 4
    if word == "EXCLUSIVE":
        return 0
    if word == "YES":
        return jobs
    if word == "FORCE":
        return _FORCE | jobs
    return 1


def _memory(extra: dict, per_cpu: str, per_node: str) -> tuple[int, dict, dict]:
    """(memory_per_cpu, partition_memory_per_cpu, partition_memory_per_node) of one
    DefMem*/MaxMem* pair: one uint64 holds either, 0 when neither is set."""
    cpu, node_mem = str(extra.get(per_cpu) or ""), str(extra.get(per_node) or "")
    if cpu.isdigit():
        return int(cpu), dp.no_val(int(cpu)), dp.no_val(None)
    value = int(node_mem) if node_mem.isdigit() else 0
    return value, dp.no_val(None), dp.no_val(value)


def partition(obj: dict) -> dict:
    """One API partition as data_parser v0.0.40's PARTITION_INFO."""
    extra = obj.get("extra") or {}
    total_cpus, total_nodes = obj.get("total_cpus") or 0, obj.get("total_nodes") or 0
    def_cpu, def_part_cpu, def_part_node = _memory(extra, "DefMemPerCPU", "DefMemPerNode")
    max_cpu, max_part_cpu, max_part_node = _memory(extra, "MaxMemPerCPU", "MaxMemPerNode")
    grace = str(extra.get("GraceTime") or "0")
    share = _max_share(extra)
    return nested(
        [
            ("nodes/allowed_allocation", _listed(extra, "AllocNodes")),
            ("accounts/allowed", _listed(extra, "AllowAccounts")),
            ("groups/allowed", _listed(extra, "AllowGroups")),
            ("qos/allowed", _listed(extra, "AllowQos")),
            ("alternate", dp.text(extra.get("Alternate"))),
            ("tres/billing_weights", dp.text(extra.get("TRESBillingWeights"))),
            ("cluster", ""),
            ("cpus/task_binding", 0),
            ("defaults/memory_per_cpu", def_cpu),
            ("defaults/partition_memory_per_cpu", def_part_cpu),
            ("defaults/partition_memory_per_node", def_part_node),
            ("defaults/time", dp.no_val(obj.get("default_time"))),
            ("accounts/deny", _listed(extra, "DenyAccounts")),
            ("qos/deny", _listed(extra, "DenyQos")),
            ("grace_time", int(grace) if grace.isdigit() else 0),
            ("defaults/job", ""),
            ("maximums/cpus_per_node", _count_limit(extra, "MaxCPUsPerNode")),
            ("maximums/cpus_per_socket", _count_limit(extra, "MaxCPUsPerSocket")),
            ("maximums/memory_per_cpu", max_cpu),
            ("maximums/partition_memory_per_cpu", max_part_cpu),
            ("maximums/partition_memory_per_node", max_part_node),
            ("maximums/nodes", _minutes(obj.get("max_nodes"))),
            ("maximums/shares", share),
            ("maximums/oversubscribe/jobs", share & ~_FORCE),
            ("maximums/oversubscribe/flags", ["force"] if share & _FORCE else []),
            ("maximums/time", _minutes(obj.get("max_time"))),
            ("minimums/nodes", obj.get("min_nodes") or 0),
            ("name", dp.text(obj.get("name"))),
            ("nodes/configured", dp.text(obj.get("nodes"))),
            ("node_sets", ""),
            ("maximums/over_time_limit", _optional(extra, "OverTimeLimit")),
            ("priority/job_factor", obj.get("priority_job_factor") or 1),
            ("priority/tier", obj.get("priority_tier") or 1),
            ("qos/assigned", dp.text(extra.get("QOS"))),
            ("timeouts/resume", _optional(extra, "ResumeTimeout")),
            ("partition/state", [obj.get("state") or "UP"]),
            ("suspend_time", _optional(extra, "SuspendTime")),
            ("timeouts/suspend", _optional(extra, "SuspendTimeout")),
            ("cpus/total", total_cpus),
            ("nodes/total", total_nodes),
            ("tres/configured", f"cpu={total_cpus},node={total_nodes},billing={total_cpus}"),
        ]
    )


_NO_CHANGE = dp.timestamp(None)  # fsched keeps no time of the last change of a list


def render_jobs(jobs: list[dict], context) -> str:
    """``context``: cli.json_meta.Context, the command and the controller's configuration.
    scontrol's --json asks with SHOW_DETAIL, and SHOW_ALL under SCONTROL_ALL."""
    import os  # noqa: PLC0415

    from cli.squeue_json import render  # noqa: PLC0415

    return render(jobs, context, ["ALL", "DETAIL"] if "SCONTROL_ALL" in os.environ else ["DETAIL"])


def render_nodes(nodes: list[dict], context) -> str:
    body = {"nodes": [node(n, context.slurmd_port) for n in nodes], "last_update": _NO_CHANGE}
    return _dump(dp.answer(body, context.meta()))


def render_partitions(parts: list[dict], context) -> str:
    body = {"partitions": [partition(p) for p in parts], "last_update": _NO_CHANGE}
    return _dump(dp.answer(body, context.meta()))


def _dump(doc: dict) -> str:
    return dp.dumps(doc)


__all__ = [
    "cpu_load",
    "hostname",
    "nested",
    "node",
    "partition",
    "put",
    "render_jobs",
    "render_nodes",
    "render_partitions",
]
