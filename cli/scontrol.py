"""``fsched scontrol``: show and change jobs, nodes, partitions, configuration.

Dispatch is table-driven so later commands slot in without touching the parser:

* ``VERBS``: ``scontrol <verb> ...`` -> handler ``(client, words, opts) -> int``
  (add ``create``, ``delete``, ``power`` ... here);
* ``SHOW``: ``scontrol show <entity> [name]`` -> handler (add ``license``,
  ``reservation`` ... here), each with a pure ``*_record`` formatter;
* ``UPDATE``: the first ``Key=`` of ``scontrol update`` names the entity
  (``NodeName``, ``JobId``; add ``PartitionName``, ``ReservationName`` here).

Verbs and entities may be abbreviated to a unique prefix, as in Slurm.
Records print in Slurm's layout: ``Key=Value`` pairs, continuation lines
indented by three spaces, a blank line after each record; ``-o`` puts a record
on one line. ``--json`` prints a job, node or partition in Slurm 23.11's JSON
(cli/scontrol_json.py), the other entities' API objects.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from cli import batch_script, clusters
from cli.fmt import (
    make_parser,
    null,
    slurm_time,
)
from cli.gres_fmt import gres_lines
from slurmwords.durations import TIMESTAMP_FORMAT, format_duration_long, format_minutes_long
from slurmwords.hostlists import expand_hostlist, fold_ordered, natural_key
from slurmwords.memory import format_memory_mb
from slurmwords.reasons import scontrol_reason
from slurmwords.version import VERSION_LINE

PROG = "scontrol"
Record = list[list[tuple[str, str]]]  # lines of (key, value) pairs
HOLDING = frozenset({"RUNNING", "SUSPENDED", "STOPPED", "COMPLETING", "CONFIGURING"})


def render_record(record: Record, one_liner: bool = False) -> str:
    """Slurm's layout: first line flush left, the rest indented by 3 spaces."""
    lines = [" ".join(f"{k}={v}" for k, v in line) for line in record if line]
    if one_liner:
        return " ".join(lines) + "\n"
    return "\n".join([lines[0], *("   " + line for line in lines[1:])]) + "\n\n"


# ----------------------------------------------------------------- records


def _ids(user: str) -> tuple[str, str]:
    """``UserId=alice(1000)`` and ``GroupId=alice(1000)`` when the name is known here."""
    try:
        import grp  # noqa: PLC0415
        import pwd  # noqa: PLC0415

        entry = pwd.getpwnam(user)
    except (ImportError, KeyError):
        return user or "(null)", "(null)"
    try:
        group = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        group = str(entry.pw_gid)
    return f"{user}({entry.pw_uid})", f"{group}({entry.pw_gid})"


def _reason(job: dict) -> str:
    """``Reason=Licenses``: the code alone, or Slurm's own long form where Slurm prints one
    (``ReqNodeNotAvail,_UnavailableNodes:node[01-02]``); fsched's detail is ``fsched explain``'s."""
    if job.get("state") != "PENDING":
        return job.get("reason") or "None"
    return scontrol_reason(job.get("reason"), job.get("reason_detail"))


def alloc_node_sid(job: dict) -> str:
    """``AllocNode:Sid=``: job_info.c's "%s:%u" (an unset host prints "(null)")."""
    return f"{job.get('alloc_node') or '(null)'}:{job.get('alloc_sid') or 0}"


def job_record(job: dict) -> Record:
    """``scontrol show job`` for one API job object (Slurm 23's keys and order)."""
    state = job.get("state") or "UNKNOWN"
    holding = state in HOLDING
    first = [("JobId", str(job.get("job_id")))]
    if job.get("array_job_id") is not None:
        first += [("ArrayJobId", str(job["array_job_id"])), ("ArrayTaskId", str(job.get("array_task_id")))]
    first.append(("JobName", str(job.get("name") or "")))
    user_id, group_id = _ids(job.get("user") or "")
    if holding and job.get("node_list"):
        try:
            num_nodes = str(len(expand_hostlist(job["node_list"])))
        except ValueError:
            num_nodes = str(job.get("min_nodes") or 1)
    else:  # Slurm prints a pending job's node range as min-max
        low, high = job.get("min_nodes") or 1, job.get("max_nodes")
        num_nodes = f"{low}-{high}" if high else str(low)
    tres = null(job.get("tres"))
    record: Record = [
        first,
        [("UserId", user_id), ("GroupId", group_id), ("MCS_label", "N/A")],
        [
            ("Priority", str(job.get("priority", 0))),
            ("Nice", str(job.get("nice") or 0)),
            ("Account", null(job.get("account"))),
            ("QOS", null(job.get("qos"))),
            # Slurm prints WCKey= with TrackWCKey, which gives every job one ('*' at least).
            *([("WCKey", job["wckey"])] if job.get("wckey") else []),
        ],
        [("JobState", state), ("Reason", _reason(job)), ("Dependency", null(job.get("dependency")))],
        [
            ("Requeue", "1" if job.get("requeue", True) else "0"),
            ("Restarts", str(job.get("restart_count") or 0)),
            # 0 for an allocation-only job (salloc's, srun's outside an allocation).
            ("BatchFlag", "1" if job.get("batch", True) else "0"),
            ("Reboot", "0"),
            ("ExitCode", job.get("exit_code") or "0:0"),
        ],
        [
            ("RunTime", format_duration_long(int(job.get("run_time") or 0))),
            ("TimeLimit", format_minutes_long(job.get("time_limit"))),
            ("TimeMin", "N/A" if job.get("time_min") is None else format_minutes_long(job["time_min"])),
        ],
        [
            ("SubmitTime", slurm_time(job.get("submit_time"), "Unknown")),
            ("EligibleTime", slurm_time(job.get("eligible_time"), "Unknown")),
        ],
        [("AccrueTime", slurm_time(_accrue_time(job), "Unknown"))],
        [
            ("StartTime", slurm_time(job.get("start_time"), "Unknown")),
            ("EndTime", slurm_time(job.get("end_time"), "Unknown")),
            ("Deadline", slurm_time(job.get("deadline"), "N/A")),
        ],
        [
            ("SuspendTime", "None"),
            ("SecsPreSuspend", "0"),
            ("LastSchedEval", slurm_time(job.get("last_sched_eval"), "Unknown")),
            ("Scheduler", "Backfill" if job.get("started_by_backfill") else "Main"),
        ],
        [("Partition", null(job.get("partition"))), ("AllocNode:Sid", alloc_node_sid(job))],
    ]
    if job.get("reservation"):
        record.append([("Reservation", job["reservation"])])
    record += [
        [("ReqNodeList", null(job.get("req_nodes"))), ("ExcNodeList", null(job.get("exc_nodes")))],
        [
            ("NodeList", null(job.get("node_list") if holding or job.get("node_list") else None)),
            # Only while backfill plans nodes for it, on NodeList's line (scontrol's order).
            *([("SchedNodeList", job["sched_nodes"])] if job.get("sched_nodes") else []),
        ],
        [("BatchHost", null(job.get("batch_host")))],
        [
            ("NumNodes", num_nodes),
            ("NumCPUs", str(job.get("num_cpus") or 1)),
            ("NumTasks", str(job.get("num_tasks") or 1)),
            ("CPUs/Task", str(job.get("cpus_per_task") or 1)),
            ("ReqB:S:C:T", "0:0:*:*"),
        ],
        [("ReqTRES", tres)],
        # Kept after the job ends, as slurmctld keeps tres_alloc_str until the record is purged.
        [("AllocTRES", tres if holding or job.get("node_list") else "(null)")],
        [
            ("Socks/Node", "*"),
            ("NtasksPerN:B:S:C", f"{job.get('ntasks_per_node') or 0}:0:*:*"),
            ("CoreSpec", "*"),
        ],
        [
            ("MinCPUsNode", str(job.get("cpus_per_task") or 1)),
            # Slurm prints the one memory request the job made.
            (
                ("MinMemoryCPU", format_memory_mb(job["mem_per_cpu"]))
                if job.get("mem_per_cpu")
                else ("MinMemoryNode", format_memory_mb(job.get("mem_per_node")))
            ),
            ("MinTmpDiskNode", "0"),
        ],
        [("Features", null(job.get("features"))), ("DelayBoot", "00:00:00")],
        [
            ("OverSubscribe", job.get("oversubscribe") or "OK"),
            ("Contiguous", "0"),
            ("Licenses", null(job.get("licenses"))),
            ("LicensesAlloc", null(job.get("licenses_alloc"))),
            ("Network", "(null)"),
        ],
        [("Command", null(job.get("command")))],
        [("WorkDir", null(job.get("work_dir")))],
        # Slurm prints Comment= only for a job that has one.
        *([[("Comment", job["comment"])]] if job.get("comment") else []),
        [("StdErr", null(job.get("std_err")))],
        [("StdIn", null(job.get("std_in")))],
        [("StdOut", null(job.get("std_out")))],
        *gres_lines(job),
        # MailUser= MailType= (print_mail_type's order), for a job that asked for mail.
        *([_mail_line(job)] if job.get("mail_type") else []),
    ]
    return record


def _accrue_time(job: dict) -> str | None:
    """A job accrues age from when it became eligible, so not before --begin's time."""
    eligible = job.get("eligible_time")
    if not eligible:
        return None
    from datetime import UTC, datetime  # noqa: PLC0415 - only show job pays for it

    try:
        return eligible if datetime.fromisoformat(eligible) <= datetime.now(UTC) else None
    except (TypeError, ValueError):
        return eligible


def _mail_line(job: dict) -> list[tuple[str, str]]:
    return [("MailUser", job.get("mail_user") or job.get("user") or ""), ("MailType", job["mail_type"])]


def node_record(node: dict) -> Record:
    """``scontrol show node`` for one API node object."""
    name = node.get("name") or ""
    host = (node.get("agent") or "").split(":")[0] or name
    cpus = node.get("cpus") or 0
    load = node.get("cpu_load")
    record: Record = [
        [
            ("NodeName", name),
            ("Arch", node.get("arch") or "(null)"),
            ("CoresPerSocket", str(node.get("cores_per_socket") or 1)),
        ],
        [
            ("CPUAlloc", str(node.get("cpus_alloc") or 0)),
            ("CPUEfctv", str(cpus)),
            ("CPUTot", str(cpus)),
            ("CPULoad", "N/A" if load is None else f"{float(load):.2f}"),
        ],
        [("AvailableFeatures", null(node.get("features")))],
        [("ActiveFeatures", null(node.get("active_features")))],
        [("Gres", null(node.get("gres")))],
        *([[("GresUsed", node["gres_used"])]] if node.get("gres_used") else []),
        [("NodeAddr", name), ("NodeHostName", host), ("Version", node.get("slurmd_version") or "(null)")],
        [("OS", node.get("os") or "(null)")],
        [
            ("RealMemory", str(node.get("real_memory") or 0)),
            ("AllocMem", str(node.get("alloc_memory") or 0)),
            ("FreeMem", "N/A" if node.get("free_mem") is None else str(node["free_mem"])),
            ("Sockets", str(node.get("sockets") or cpus or 1)),
            ("Boards", "1"),
        ],
        [
            ("State", node.get("state") or "UNKNOWN"),
            ("ThreadsPerCore", str(node.get("threads_per_core") or 1)),
            ("TmpDisk", str(node.get("tmp_disk") or 0)),
            ("Weight", str(node.get("weight", 1))),
            ("Owner", "N/A"),
            ("MCS_label", "N/A"),
        ],
        *([[("NextState", node["next_state"])]] if node.get("next_state") else []),
        [("Partitions", ",".join(node.get("partitions") or []) or "(null)")],
        [
            ("BootTime", slurm_time(node.get("boot_time"), "None")),
            ("SlurmdStartTime", slurm_time(node.get("boot_time"), "None")),
        ],
        [("LastBusyTime", slurm_time(node.get("last_busy"), "None")), ("ResumeAfterTime", "None")],
        [("CfgTRES", node.get("cfg_tres") or "")],
        [("AllocTRES", node.get("alloc_tres") or "")],
        [("CurrentWatts", "0"), ("AveWatts", "0")],
    ]
    record += load_lines(node)
    if node.get("instance_id") or node.get("instance_type"):
        record.append(
            [("InstanceId", null(node.get("instance_id"))), ("InstanceType", null(node.get("instance_type")))]
        )
    if node.get("extra"):
        record.append([("Extra", node["extra"])])
    if node.get("reason"):
        stamp = slurm_time(node.get("reason_time"), "Unknown")
        record.append([("Reason", f"{node['reason']} [{node.get('reason_user') or 'Unknown'}@{stamp}]")])
    return record


def load_lines(node: dict) -> Record:
    """fsched's load thresholds (not Slurm's): the latest indices and the thresholds in
    force, each on a line of its own, when there are any."""
    lines: Record = []
    indices = node.get("load_indices")
    if indices:
        value = (
            f"mem={indices['mem']},ut={float(indices['ut']):.1f},r15s={float(indices['r15s']):.2f},"
            f"r1m={float(indices['r1m']):.2f},r15m={float(indices['r15m']):.2f}"
        )
        lines.append([("LoadIndices", value)])
    thresholds = node.get("load_thresholds")
    if thresholds:
        lines.append([("LoadThresholds", ",".join(f"{k}={v:g}" for k, v in thresholds.items()))])
    return lines


def partition_record(part: dict) -> Record:
    """``scontrol show partition`` for one API partition object; ``extra`` keys override/append."""
    extra = dict(part.get("extra") or {})
    total_cpus, total_nodes = part.get("total_cpus") or 0, part.get("total_nodes") or 0
    default_time = part.get("default_time")
    lines = [
        [("PartitionName", part.get("name") or "")],
        [("AllowGroups", "ALL"), ("AllowAccounts", "ALL"), ("AllowQos", "ALL")],
        [("AllocNodes", "ALL"), ("Default", "YES" if part.get("default") else "NO"), ("QoS", "N/A")],
        [
            ("DefaultTime", format_minutes_long(default_time, "NONE")),
            ("DisableRootJobs", "NO"),
            ("ExclusiveUser", "NO"),
            ("GraceTime", "0"),
            ("Hidden", "NO"),
        ],
        [
            ("MaxNodes", "UNLIMITED" if part.get("max_nodes") is None else str(part["max_nodes"])),
            ("MaxTime", format_minutes_long(part.get("max_time"))),
            ("MinNodes", str(part.get("min_nodes") or 0)),
            ("LLN", "NO"),
            ("MaxCPUsPerNode", "UNLIMITED"),
            ("MaxCPUsPerSocket", "UNLIMITED"),
        ],
        [("Nodes", null(part.get("nodes")))],
        [
            ("PriorityJobFactor", "1"),
            ("PriorityTier", str(part.get("priority_tier") or 1)),
            ("RootOnly", "NO"),
            ("ReqResv", "NO"),
            ("OverSubscribe", "NO"),
        ],
        [("OverTimeLimit", "NONE"), ("PreemptMode", "OFF")],
        [
            ("State", part.get("state") or "UP"),
            ("TotalCPUs", str(total_cpus)),
            ("TotalNodes", str(total_nodes)),
            ("SelectTypeParameters", "NONE"),
        ],
        [("JobDefaults", "(null)")],
        [("DefMemPerNode", "UNLIMITED"), ("MaxMemPerNode", "UNLIMITED")],
        [("TRES", f"cpu={total_cpus},node={total_nodes},billing={total_cpus}")],
    ]
    record: Record = [[(k, str(extra.pop(k, v))) for k, v in line] for line in lines]
    if extra:  # slurm.conf keys fsched keeps but the layout above does not name
        record.append([(k, str(v)) for k, v in extra.items()])
    return record


def _count(value) -> str:
    return "INFINITE" if value is None else str(value)


def license_record(lic: dict) -> Record:
    """``scontrol show license``: a cluster license, or one layer of a hierarchical
    resource (Slurm's hres.html, "Viewing a Resource")."""
    record: Record = [
        [("LicenseName", str(lic.get("license_name") or ""))],
        [
            ("Total", _count(lic.get("total"))),
            ("Used", str(lic.get("used") or 0)),
            ("Free", _count(lic.get("free"))),
            ("Reserved", str(lic.get("reserved") or 0)),
            ("Remote", "yes" if lic.get("remote") else "no"),
        ],
    ]
    if lic.get("hres"):
        layer = [("LayerName", str(lic.get("layer_name") or ""))]
        if lic.get("parent_name"):
            layer.append(("ParentName", lic["parent_name"]))
        layer += [
            ("Nodes", null(lic.get("nodes"))),
            ("Mode", str(lic.get("mode"))),
            ("DisableHRES", "true" if lic.get("disable_hres") else "false"),
            ("DisableLayer", "true" if lic.get("disable_layer") else "false"),
            ("ConfTotal", _count(lic.get("conf_total"))),
            ("BaseUsage", str(lic.get("base_usage") or 0)),
        ]
        base = ",".join(f"{b['name']}:{b['value']}" for b in lic.get("base") or [])
        record += [layer, [("Base", base or "(null)")]]
    return record


def config_lines(config: dict, now: str) -> list[str]:
    """``scontrol show config``: ``Key = Value`` lines, keys sorted as Slurm prints them."""
    options = {str(k): v for k, v in (config.get("options") or {}).items()}
    if config.get("cluster_name") is not None:
        options.setdefault("ClusterName", config["cluster_name"])
    licenses = config.get("licenses") or {}
    if licenses:
        options.setdefault("Licenses", ",".join(f"{k}:{v}" for k, v in licenses.items()))
    lines = [f"Configuration data as of {now}"]
    for key in sorted(options, key=str.lower):
        value = options[key]
        value = "(null)" if value is None or value == "" else value
        lines.append(f"{key:<23} = {value}")
    return lines


# ------------------------------------------------------------------ show


class Opts:
    __slots__ = ("command", "details", "json", "one_liner", "quiet")

    def __init__(self, ns) -> None:
        self.one_liner = bool(ns.oneliner)
        self.json = bool(ns.json)
        self.command = ["scontrol", *getattr(ns, "argv", [])]  # --json's meta.command
        self.details = bool(ns.details)
        self.quiet = bool(ns.quiet)


def _write_json(data: object) -> None:
    import json  # noqa: PLC0415 - only --json output pays for it

    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _print_records(
    kind: str, objects: list[dict], formatter: Callable[[dict], Record], opts: Opts, client=None
) -> None:
    if opts.json and kind in ("jobs", "nodes", "partitions"):
        from cli import json_meta, scontrol_json  # noqa: PLC0415 - only --json pays for it

        render = getattr(scontrol_json, f"render_{kind}")
        sys.stdout.write(render(objects, json_meta.Context(client, opts.command)))
        return
    if opts.json:
        _write_json({kind: objects})
        return
    sys.stdout.write("".join(render_record(formatter(obj), opts.one_liner) for obj in objects))


def show_job(client, name: str | None, opts: Opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    try:
        # start=1: a pending job's StartTime=/EndTime=/SchedNodeList= are backfill's plan.
        if name is None:
            jobs = client.get_all("/api/jobs/", {"start": "1"})
        elif name.isdigit():
            jobs = [client.get(f"/api/jobs/{int(name)}/", {"start": "1"})]
            if jobs[0].get("array_job_id") == int(name):
                # The array's own id: every task of it, as scontrol shows an array job.
                jobs = client.get_all("/api/jobs/", {"array_job_id": name, "state": "all", "start": "1"})
        else:
            jobs = client.get_all("/api/jobs/", {"job_id": name, "state": "all", "start": "1"})
    except ApiError as exc:
        message = "Invalid job id specified" if exc.status == 404 else exc.message
        sys.stderr.write(f"slurm_load_jobs error: {message}\n")
        return 1
    if name is not None and not jobs:
        sys.stderr.write("slurm_load_jobs error: Invalid job id specified\n")
        return 1
    if not jobs and not opts.json:
        sys.stdout.write("No jobs in the system\n")
        return 0
    _print_records("jobs", jobs, job_record, opts, client)
    return 0


def show_node(client, name: str | None, opts: Opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    try:
        if name is None:
            nodes = client.get_all("/api/nodes/")
        elif any(c in name for c in "[,"):
            nodes = client.get_all("/api/nodes/", {"name": name})
        else:
            nodes = [client.get(f"/api/nodes/{name}/")]
    except ApiError as exc:
        if exc.status == 404:
            sys.stderr.write(f"Node {name} not found\n")
        else:
            sys.stderr.write(f"slurm_load_node error: {exc.message}\n")
        return 1
    if name is not None and not nodes:
        sys.stderr.write(f"Node {name} not found\n")
        return 1
    _print_records("nodes", nodes, node_record, opts, client)
    return 0


def show_partition(client, name: str | None, opts: Opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    try:
        parts = client.get_all("/api/partitions/")
    except ApiError as exc:
        sys.stderr.write(f"slurm_load_partitions error: {exc.message}\n")
        return 1
    if name is not None:
        parts = [p for p in parts if p.get("name") == name]
        if not parts:
            sys.stderr.write(f"Partition {name} not found\n")
            return 1
    _print_records("partitions", parts, partition_record, opts, client)
    return 0


def show_config(client, name: str | None, opts: Opts) -> int:
    import time  # noqa: PLC0415

    from cli.client import ApiError  # noqa: PLC0415

    try:
        config = client.get("/api/config/")
    except ApiError as exc:
        sys.stderr.write(f"slurm_load_ctl_conf error: {exc.message}\n")
        return 1
    if opts.json:
        _write_json(config)
        return 0
    now = time.strftime(TIMESTAMP_FORMAT)
    sys.stdout.write("".join(line + "\n" for line in config_lines(config or {}, now)))
    return 0


def _show_listed(
    client, name: str | None, opts: Opts, *, path: str, key: str, noun: str, empty: str, record
) -> int:
    """``scontrol show license|reservation [NAME]``: one API list, Slurm's messages."""
    from cli.client import ApiError  # noqa: PLC0415

    try:
        answer = client.get(path, {"name": name} if name else None)
    except ApiError as exc:
        if exc.status == 404:
            sys.stderr.write(f"{noun.capitalize()} {name} not found\n")
        else:
            sys.stderr.write(f"slurm_load_{key} error: {exc.message}\n")
        return 1
    found = (answer or {}).get(key) or []
    if not found and not opts.json:
        sys.stdout.write(empty + "\n")
        return 0
    _print_records(key, found, record, opts)
    return 0


def show_license(client, name: str | None, opts: Opts) -> int:
    return _show_listed(
        client,
        name,
        opts,
        path="/api/licenses/",
        key="licenses",
        noun="license",
        empty="No licenses configured in the system",
        record=license_record,
    )


# scontrol show <entity>: add entities here (reservation, ...).
def show_assoc_mgr(client, _name: str | None, opts: Opts) -> int:
    """``scontrol show assoc_mgr``: the association and QOS records the controller holds,
    with their usage and the decay half-lives in force (Slurm's resource_limits.html)."""
    from cli.client import ApiError  # noqa: PLC0415

    try:
        answer = client.get("/api/limits/assoc_mgr/")
    except ApiError as exc:
        sys.stderr.write(f"slurm_load_assoc_mgr_info error: {exc.message}\n")
        return 1
    if opts.json:
        _write_json(answer)
        return 0
    out = ["Current Association Manager state", "", *answer.get("header", []), "", "Association Records", ""]
    for record in answer.get("associations", []):
        lines = record.get("lines", [])
        out.extend(lines[:1] + ["    " + line for line in lines[1:]])
    out += ["", "QOS Records", ""]
    for record in answer.get("qos", []):
        lines = record.get("lines", [])
        out.extend(lines[:1] + ["    " + line for line in lines[1:]])
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def reservation_record(r: dict) -> Record:
    """``scontrol show reservation``: Slurm 23's keys and order for one API object."""
    cores = str(r.get("core_count") or 0)
    return [
        [
            ("ReservationName", str(r.get("name") or "")),
            ("StartTime", slurm_time(r.get("start_time"), "Unknown")),
            ("EndTime", slurm_time(r.get("end_time"), "Unknown")),
            ("Duration", format_duration_long(int(r.get("duration") or 0))),
        ],
        [
            ("Nodes", null(r.get("nodes"))),
            ("NodeCnt", str(r.get("node_count") or 0)),
            ("CoreCnt", cores),
            ("Features", "(null)"),
            ("PartitionName", null(r.get("partition"))),
            ("Flags", ",".join(r.get("flags") or [])),
        ],
        [("TRES", f"cpu={cores}" if r.get("core_count") else "(null)")],
        [
            ("Users", null(r.get("users"))),
            ("Groups", "(null)"),
            ("Accounts", null(r.get("accounts"))),
            ("Licenses", null(r.get("licenses"))),
            ("State", str(r.get("state") or "INACTIVE")),
            ("BurstBuffer", "(null)"),
        ],
        [("MaxStartDelay", "(null)")],
    ]


def show_reservation(client, name: str | None, opts: Opts) -> int:
    return _show_listed(
        client,
        name,
        opts,
        path="/api/reservations/",
        key="reservations",
        noun="reservation",
        empty="No reservations in the system",
        record=reservation_record,
    )


SHOW: dict[str, Callable[..., int]] = {
    "assoc_mgr": show_assoc_mgr,
    "reservation": show_reservation,
    "job": show_job,
    "license": show_license,
    "node": show_node,
    "partition": show_partition,
    "config": show_config,
    "step": lambda client, name, opts: _show_step(client, name, opts),  # noqa: PLW0108 - defined below
    "daemons": lambda client, name, opts: _show_daemons(client, name, opts),  # noqa: PLW0108 - defined below
    "topology": lambda client, name, opts: show_topology(client, name, opts),  # noqa: PLW0108 - defined below
}


def _show_daemons(client, name: str | None, opts: Opts) -> int:
    from cli.scontrol_daemons import show_daemons  # noqa: PLC0415 - only show daemons pays for it

    return show_daemons(client, name, opts)


# TopologyPlugin values whose cluster is flat: topology/default prints nothing at all.
FLAT_TOPOLOGY = frozenset({"", "topology/default", "topology/none", "default", "none"})


def show_topology(client, name: str | None, opts: Opts) -> int:
    """``scontrol show topology [NAME]``: fsched reads no topology.conf, so every cluster
    is flat: nothing to print, as Slurm's topology/default; a configured tree or block
    plugin has no switches, which Slurm's own plugin reports so."""
    plugin = str(((client.get("/api/config/") or {}).get("options") or {}).get("TopologyPlugin") or "")
    if plugin.strip().lower() not in FLAT_TOPOLOGY:
        sys.stderr.write("scontrol: error: No topology information available\n")
    return 0


def _show_step(client, name: str | None, opts: Opts) -> int:
    from cli.scontrol_steps import show_step  # noqa: PLC0415 - only show step pays for it

    return show_step(client, name, opts, _print_records)


def lookup(table: dict, word: str) -> str | None:
    """Exact name, a plural (``jobs``), or a unique prefix (``part``) of a table key."""
    word = word.lower()
    if word in table:
        return word
    if word.endswith("s") and word[:-1] in table:
        return word[:-1]
    matches = [key for key in table if key.startswith(word)]
    return matches[0] if len(matches) == 1 else None


def cmd_show(client, words: list[str], opts: Opts) -> int:
    if not words:
        sys.stderr.write("scontrol: error: too few arguments for keyword:show\n")
        return 1
    entity = lookup(SHOW, words[0])
    if entity is None:
        sys.stderr.write(f"scontrol: error: invalid entity:{words[0]} for keyword:show\n")
        return 1
    return SHOW[entity](client, words[1] if len(words) > 1 else None, opts)


# ---------------------------------------------------------------- update


def parse_pairs(words: list[str]) -> list[tuple[str, str]]:
    """``["NodeName=n1", "Reason=disk bad"]`` -> ``[("NodeName", "n1"), ("Reason", "disk bad")]``."""
    pairs = []
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise ValueError(f"Invalid input: {word}")
        pairs.append((key, value))
    return pairs


NODE_KEYS = {"nodename": "nodes", "state": "state", "reason": "reason", "weight": "weight"}
NODE_KEYS |= {"features": "features", "availablefeatures": "features", "activefeatures": "active_features"}
NODE_KEYS |= {"suspendtime": "suspend_time"}  # per-node, takes effect at once (power_save.html)
# Cloud accounting (Slurm's power_save.html, "Hybrid Cluster"): kept on the node and in its history.
NODE_KEYS |= {"instanceid": "instance_id", "instancetype": "instance_type", "extra": "extra"}
NODE_STATES = frozenset(
    {"DRAIN", "RESUME", "DOWN", "UNDRAIN", "IDLE", "FAIL", "POWER_DOWN", "POWER_UP", "POWER_DOWN_ASAP"}
    | {"POWER_DOWN_FORCE", "NO_RESP", "UNDRAIN", "CANCEL_REBOOT", "FUTURE", "REBOOT"}
)


# scontrol's own lines after a refused update key or node state (src/scontrol/update_job.c,
# update_node.c: fprintf, no "scontrol: error:").
ABORTED = "Request aborted"
VALID_NODE_STATES = (
    "Valid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN\n"
    "Not all states are valid given a node's prior state"
)


def node_update_body(pairs: list[tuple[str, str]]) -> dict:
    """The ``POST /api/nodes/update/`` body for ``NodeName=... State=... Reason=...``."""
    body: dict = {}
    for key, value in pairs:
        field = NODE_KEYS.get(key.lower())
        if field is None:
            raise ValueError(f"Update of this parameter is not supported: {key}={value}\n{ABORTED}")
        if field == "state":
            if value.upper() not in NODE_STATES:
                raise ValueError(f"Invalid input: {key}={value}\n{ABORTED}\n{VALID_NODE_STATES}")
            body[field] = value.upper()
            continue
        if field == "weight":
            if not value.isdigit():
                raise ValueError(f"Invalid weight: {value}")
            body[field] = int(value)
            continue
        body[field] = value
    if body.get("state") in ("DRAIN", "DOWN", "FAIL") and not body.get("reason"):
        raise ValueError("You must specify a reason when DOWNING or DRAINING a node. Request denied")
    return body


# scontrol update JobId=N Key=Value: scontrol key -> PATCH field
JOB_KEYS = {
    "timelimit": "time_limit",
    "partition": "partition",
    "name": "name",
    "jobname": "name",
    "account": "account",
    "qos": "qos",
    "licenses": "licenses",
    "reservation": "reservation",
    "features": "features",
    "reqnodelist": "req_nodes",
    "nodelist": "req_nodes",
    "excnodelist": "exc_nodes",
    "numnodes": "nodes",
    "numtasks": "num_tasks",
    "numcpus": "num_cpus",
    "minmemorynode": "mem",
    "priority": "priority",
    "nice": "nice",
    "dependency": "dependency",
    "starttime": "begin",
    "requeue": "requeue",
    "comment": "comment",
    "workdir": "work_dir",
    "stdout": "std_out",
    "stderr": "std_err",
}
# update_job.c's parse_uint32 fields, with the name its error() prints whatever was typed.
_INT_FIELDS = {"priority": "Priority", "num_tasks": "NumTasks", "num_cpus": "NumCPUs"}
_NO_VAL = 0xFFFFFFFE


def _uint32(name: str, value: str) -> int:
    """parse_uint32 (proc_args.c): strtoll's whole text, 0 up to below NO_VAL (an empty
    text is strtoll's 0, so ``Priority=`` holds the job as it does in Slurm)."""
    if value == "":
        return 0
    text = value.lstrip(" \t\n\r\f\v")
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or not 0 <= int(text) < _NO_VAL:
        raise ValueError(f"scontrol: error: Invalid {name} value: {value}")
    return int(text)


def _nice_value(key: str, value: str) -> int:
    from slurmwords.nice import MAX_NICE, OUT_OF_RANGE, parse_nice  # noqa: PLC0415

    try:
        return parse_nice(value)
    except ValueError as exc:
        if str(exc) == OUT_OF_RANGE:  # scontrol's own words for it, not sbatch's
            message = f"Nice value out of range (+/- {MAX_NICE}). Value ignored"
            raise ValueError(f"scontrol: error: {message}") from None
        raise ValueError(f"Invalid {key} value: {value}") from None


def _bare_nice(words: list[str]) -> list[str]:
    """``scontrol update JobId=N Nice``: a Nice without a value is 100, as sbatch's --nice
    (scontrol reads ``Ni``, ``Nic`` and ``Nice`` in any case so)."""
    if not words or not words[0].lower().startswith("jobid="):
        return words
    return [f"{w}=100" if "=" not in w and len(w) >= 2 and "nice".startswith(w.lower()) else w for w in words]


def job_update_body(pairs: list[tuple[str, str]]) -> dict:
    """The ``PATCH /api/jobs/{id}/`` body for the pairs after ``JobId=``."""
    body: dict = {}
    for key, value in pairs:
        field = JOB_KEYS.get(key.lower())
        if field is None:
            raise ValueError(f"Update of this parameter is not supported: {key}={value}\n{ABORTED}")
        if field == "nice":
            body[field] = _nice_value(key, value)
        elif field in _INT_FIELDS:
            body[field] = _uint32(_INT_FIELDS[field], value)
        elif field == "requeue":
            body[field] = value.lower() not in ("0", "no", "false")
        else:
            body[field] = value
    return body


def _request(action: Callable[[], object], failure: str) -> tuple[int, object]:
    """Run one API call: a bad argument (ValueError) prints as is, a refusal as
    ``<failure>: <message>``; returns (exit status, the answer)."""
    from cli.client import ApiError  # noqa: PLC0415

    try:
        return 0, action()
    except ValueError as exc:
        sys.stderr.write(f"{exc}\n")
    except ApiError as exc:
        sys.stderr.write(f"{failure}: {exc.message}\n")
    return 1, None


def update_node(client, pairs: list[tuple[str, str]], opts: Opts) -> int:
    return _request(lambda: client.post("/api/nodes/update/", node_update_body(pairs)), "slurm_update error")[
        0
    ]


def update_job(client, pairs: list[tuple[str, str]], opts: Opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    ids_text = pairs[0][1]
    try:
        body = job_update_body(pairs[1:])
    except ValueError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    if not body:
        sys.stderr.write("No changes specified\n")
        return 1
    status = 0
    for word in ids_text.split(","):
        try:
            for job_id in resolve_job_ids(client, word):
                client.patch(f"/api/jobs/{job_id}/", body)
        except (ApiError, ValueError) as exc:
            # The job-submit plugin's message (slurm.user_msg), which libslurm prints as an
            # error line per line of it before scontrol's own.
            err_msg = exc.payload.get("err_msg") if isinstance(exc, ApiError) else None
            for line in err_msg.splitlines() if isinstance(err_msg, str) else ():
                sys.stderr.write(f"scontrol: error: {line}\n")
            message = getattr(exc, "message", None) or str(exc)
            # update_job.c (23.11) prints slurm_strerror and the job id as given.
            sys.stderr.write(f"{message} for job {word}\n")
            status = 1
    return status


# scontrol update HRESName=R [LayerName=L] ...: scontrol key -> POST /api/hres/ field
HRES_KEYS = {
    "hresname": "hres_name",
    "layername": "layer_name",
    "nodes": "nodes",
    "count": "count",
    "base": "base",
    "disablehres": "disable_hres",
    "disablelayer": "disable_layer",
}


def hres_update_body(pairs: list[tuple[str, str]]) -> dict:
    """The ``POST /api/hres/`` body; values are passed as typed, the controller checks them
    (``DisableHRES``/``DisableLayer`` take only true or false, ``Count`` an integer)."""
    body: dict = {}
    for key, value in pairs:
        field = HRES_KEYS.get(key.lower())
        if field is None:
            raise ValueError(f"Update of this parameter is not supported: {key}={value}")
        if field in body:
            raise ValueError(f"Duplicate parameter: {key}")
        body[field] = value
    if len(body) <= 2 and set(body) <= {"hres_name", "layer_name"}:
        raise ValueError("No changes specified")
    return body


def update_hres(client, pairs: list[tuple[str, str]], opts: Opts) -> int:
    return _request(lambda: client.post("/api/hres/", hres_update_body(pairs)), "slurm_update error")[0]


# scontrol create|update reservation: scontrol key -> API field (values passed as typed,
# the controller parses times, node lists, flags and licenses).
RESV_KEYS = {
    "reservationname": "name",
    "reservation": "name",
    "starttime": "start_time",
    "endtime": "end_time",
    "duration": "duration",
    "nodes": "nodes",
    "nodelist": "nodes",
    "users": "users",
    "user": "users",
    "accounts": "accounts",
    "account": "accounts",
    "flags": "flags",
    "partitionname": "partition",
    "partition": "partition",
    "licenses": "licenses",
    "license": "licenses",
}


def reservation_body(pairs: list[tuple[str, str]]) -> dict:
    body: dict = {}
    for key, value in pairs:
        field = RESV_KEYS.get(key.lower())
        if field is None:
            raise ValueError(f"Invalid input: {key}={value}")
        if field in body:
            raise ValueError(f"Duplicate parameter: {key}")
        body[field] = value
    return body


def update_reservation(client, pairs: list[tuple[str, str]], opts: Opts) -> int:
    name = pairs[0][1]

    def send() -> object:
        body = reservation_body(pairs[1:])
        if not body:
            raise ValueError("No changes specified")
        return client.patch(f"/api/reservations/{name}/", body)

    status, _ = _request(send, "Error updating the reservation")
    if status == 0:
        sys.stdout.write("Reservation updated.\n")
    return status


POWER_SETTINGS = ("SuspendExcNodes", "SuspendExcParts", "SuspendExcStates")


def update_power_settings(client, pairs: list[tuple[str, str]], opts: Opts) -> int:
    """``scontrol update SuspendExcNodes=... SuspendExcParts=... SuspendExcStates=...``."""
    names = {k.lower(): k for k in POWER_SETTINGS}
    body = {}
    for key, value in pairs:
        if key.lower() not in names:
            sys.stderr.write(f"Update of this parameter is not supported: {key}={value}\n")
            return 1
        body[names[key.lower()]] = value
    return _request(lambda: client.post("/api/power/settings/", body), "slurm_update error")[0]


# scontrol update <Key>=...: the first key names the entity. Add "partitionname" ... here.
UPDATE: dict[str, Callable[..., int]] = {
    "nodename": update_node,
    "jobid": update_job,
    "hresname": update_hres,
    "reservationname": update_reservation,
    "reservation": update_reservation,
    **{k.lower(): update_power_settings for k in POWER_SETTINGS},
}


def cmd_update(client, words: list[str], opts: Opts) -> int:
    try:
        pairs = parse_pairs(_bare_nice(words))
    except ValueError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    if not pairs:
        sys.stderr.write("scontrol: error: too few arguments for keyword:update\n")
        return 1
    handler = UPDATE.get(pairs[0][0].lower())
    if handler is None:
        keys = ", ".join(k for k, _ in pairs)
        sys.stderr.write(
            f"No valid entity in update command\nInput line must include {_UPDATE_HINT} ({keys})\n"
        )
        return 1
    return handler(client, pairs, opts)


_UPDATE_HINT = '"NodeName", "JobId", "HRESName" or "ReservationName"'


def cmd_create(client, words: list[str], opts: Opts) -> int:
    """``scontrol create reservation [ReservationName=R] StartTime= Duration=|EndTime= ...``."""

    if words and words[0].lower().startswith("nodename="):
        return create_node(client, words, opts)
    if words and "=" not in words[0]:
        if lookup({"reservation": None}, words[0]) is None:
            sys.stderr.write(f"scontrol: error: invalid entity:{words[0]} for keyword:create\n")
            return 1
        words = words[1:]
    status, answer = _request(
        lambda: client.post("/api/reservations/", reservation_body(parse_pairs(words))),
        "Error creating the reservation",
    )
    if status == 0:
        sys.stdout.write(f"Reservation created: {(answer or {}).get('name', '')}\n")
    return status


def create_node(client, words: list[str], opts: Opts) -> int:
    """``scontrol create NodeName=node33 State=cloud HRES='[...]'``: a dynamic node."""
    return _request(
        lambda: client.post("/api/nodes/create/", dict(parse_pairs(words))), "Error creating node(s)"
    )[0]


def delete_nodes(client, names: str) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    try:
        client.post("/api/nodes/delete/", {"nodes": names})
    except ApiError as exc:
        sys.stderr.write(f"Error deleting node(s): {exc.message}\n")
        return 1
    return 0


def cmd_delete(client, words: list[str], opts: Opts) -> int:
    """``scontrol delete ReservationName=R`` (or ``delete reservation R``)."""
    from cli.client import ApiError  # noqa: PLC0415

    name = ""
    if len(words) == 2 and "=" not in words[0] and lookup({"reservation": None}, words[0]):
        name = words[1]
    elif len(words) == 1 and words[0].lower().startswith("nodename="):
        return delete_nodes(client, words[0].partition("=")[2])
    elif len(words) == 1 and "=" in words[0]:
        key, _, name = words[0].partition("=")
        if key.lower() not in ("reservationname", "reservation"):
            sys.stderr.write(f"scontrol: error: invalid entity:{key} for keyword:delete\n")
            return 1
    if not name:
        sys.stderr.write("scontrol: error: usage: delete ReservationName=<name>\n")
        return 1
    try:
        client.request("DELETE", f"/api/reservations/{name}/")
    except ApiError as exc:
        sys.stderr.write(f"Error deleting the reservation: {exc.message}\n")
        return 1
    return 0


# ----------------------------------------------------------- job actions


def resolve_job_ids(client, word: str) -> list[int]:
    """A word of ``hold 12,12_3,12_[1-2]`` -> the API job ids it names."""
    from cli.scancel import parse_job_ids  # noqa: PLC0415 - shares Slurm's job id grammar

    try:
        ids = parse_job_ids([word])
    except ValueError:
        raise ValueError(f"Invalid job id specified: {word}") from None
    out = [i for i in ids if isinstance(i, int)]
    names = [i for i in ids if isinstance(i, str)]
    if names:
        jobs = client.get_all("/api/jobs/", {"job_id": ",".join(names), "state": "all"})
        if not jobs:
            raise ValueError(f"Invalid job id specified: {word}")
        out.extend(int(job["job_id"]) for job in jobs)
    return out


# action verb -> (API path segment, the request's body); scontrol 23.11 words every failure
# "<error> for job <id>".
JOB_ACTIONS: dict[str, tuple[str, dict | None]] = {
    "hold": ("hold", None),
    "uhold": ("hold", {"user": True}),
    "release": ("release", None),
    "requeue": ("requeue", None),
    "requeuehold": ("requeue", {"hold": True}),
    "suspend": ("suspend", None),
    "resume": ("resume", None),
}
WORDING = "{message} for job {job}"


def _requeue_flags(verb: str, words: list[str]) -> list[str] | None:
    """scontrol's parse_requeue_flags: the leading ``Incomplete`` and ``State=SpecialExit``
    words of requeue and requeuehold, taken off the job list (None: one fsched refuses)."""
    if verb not in ("requeue", "requeuehold"):
        return words
    while words:
        word = words[0].lower()
        if word and "incomplete".startswith(word):
            # Requeue only a job that did not complete: fsched requeues what it is asked to.
            words = words[1:]
        elif word.startswith("state=") and ("specialexit".startswith(word[6:]) or word[6:8] == "se"):
            sys.stderr.write("scontrol: error: State=SpecialExit is not supported by fsched\n")
            return None
        else:
            break
    return words


def _bare_id(word: str) -> str:
    """scontrol takes ``JobId=12`` and ``Job=12`` for ``12``."""
    for prefix in ("jobid=", "job="):
        if word.lower().startswith(prefix):
            return word[len(prefix) :]
    return word


def job_action(verb: str) -> Callable[..., int]:
    segment, body = JOB_ACTIONS[verb]

    def handler(client, words: list[str], opts: Opts) -> int:
        from cli.client import ApiError  # noqa: PLC0415

        if not words:
            sys.stderr.write(f"scontrol: error: too few arguments for keyword:{verb}\n")
            return 1
        listed = _requeue_flags(verb, words)
        if listed is None:
            return 1
        status = 0
        for word in (_bare_id(w) for arg in listed for w in arg.split(",") if w):
            try:
                for job_id in resolve_job_ids(client, word):
                    try:
                        client.post(f"/api/jobs/{job_id}/{segment}/", body)
                    except ApiError as exc:
                        message = "Invalid job id specified" if exc.status == 404 else exc.message
                        sys.stderr.write(WORDING.format(message=message, job=job_id) + "\n")
                        status = 1
            except ValueError as exc:
                sys.stderr.write(f"{exc}\n")
                status = 1
        return status

    return handler


def cmd_reconfigure(client, words: list[str], opts: Opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    try:
        answer = client.post("/api/reconfigure/")
    except ApiError as exc:
        sys.stderr.write(f"slurm_reconfigure error: {exc.message}\n")
        for line in exc.payload.get("errors") or []:
            sys.stderr.write(f"{line}\n")
        return 1
    for warning in (answer or {}).get("warnings") or [] if isinstance(answer, dict) else []:
        sys.stderr.write(f"scontrol: warning: {warning}\n")
    return 0


def cmd_power(client, words: list[str], opts: Opts) -> int:
    """``scontrol power <up|down> [asap|force] {ALL|<nodelist>} [Action=<name>] [Reason=<reason>]``:
    the controller parses the words (one rule for the CLI and the console)."""
    from cli.client import ApiError  # noqa: PLC0415

    if not words:
        sys.stderr.write(
            "scontrol: error: usage: power <up|down> [asap|force] {ALL|<nodelist>} "
            "[Action=<name>] [Reason=<reason>]\n"
        )
        return 1
    try:
        answer = client.post("/api/power/", {"args": list(words)})
    except ApiError as exc:
        sys.stderr.write(f"slurm_update error: {exc.message}\n")
        return 1
    for message in (answer or {}).get("messages") or [] if isinstance(answer, dict) else []:
        sys.stdout.write(f"{message}\n")
    return 0


def reboot_body(words: list[str]) -> dict:
    """``scontrol reboot [ASAP] [nextstate={RESUME|DOWN}] [reason=<reason>] {ALL|<NodeList>}``
    as the ``POST /api/nodes/reboot/`` body; ValueError with scontrol's words."""
    if len(words) > 6:
        raise ValueError("too many arguments for keyword:reboot")
    body: dict = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq and word.upper() == "ASAP":
            body["asap"] = True
        elif not eq and word.upper() == "FORCE":
            raise ValueError("FORCE is not supported: drain the node, or use ASAP")
        elif eq and key.lower() == "reason":
            if not value:
                raise ValueError("missing reason")
            if "reason" in body:
                raise ValueError("multiple reasons specified")
            body["reason"] = value
        elif eq and key.lower() == "nextstate":
            if not value:
                raise ValueError("missing state")
            # A prefix of either word, as Slurm takes it (nextstate=res).
            state = next((s for s in ("DOWN", "RESUME") if s.startswith(value.upper())), None)
            if state is None:
                raise ValueError(f"Invalid state: {value}\n Valid states: DOWN, RESUME")
            body["next_state"] = state
        elif eq and key.lower() == "action":
            raise ValueError("Action= is not supported: the RebootProgram of slurm.conf is run")
        elif "nodes" in body:
            raise ValueError("Multiple node lists specified")
        else:
            body["nodes"] = word
    if "nodes" not in body:
        raise ValueError("Missing node list. Specify ALL|<NodeList>")
    return body


# Slurm's scontrol checks its own slurm.conf and says this before asking slurmctld.
NO_REBOOT_PROGRAM = "RebootProgram isn't defined"


def cmd_reboot(client, words: list[str], opts: Opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    try:
        answer = client.post("/api/nodes/reboot/", reboot_body(words))
    except ValueError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    except ApiError as exc:
        if exc.message == NO_REBOOT_PROGRAM:
            sys.stderr.write(f"scontrol: error: {NO_REBOOT_PROGRAM}\nscontrol_reboot_nodes error\n")
        else:
            sys.stderr.write(f"scontrol_reboot_nodes error: {exc.message}\n")
        return 1
    message = (answer or {}).get("message") if isinstance(answer, dict) else ""
    if message:
        sys.stderr.write(f"scontrol: error: {message}\n")
    return 0


def cmd_cancel_reboot(client, words: list[str], opts: Opts) -> int:
    """``scontrol cancel_reboot <NodeList>``."""
    if len(words) != 1:
        many = "too many arguments" if words else "missing argument"
        sys.stderr.write(f"{many} for keyword:cancel_reboot\n")
        return 1
    return _request(
        lambda: client.post("/api/nodes/cancel_reboot/", {"nodes": words[0]}), "slurm_update error"
    )[0]


def _host_names(words: list[str], needs: str) -> list[str] | None:
    """The names a show hostnames/hostlist line gives, or None after saying what is wrong."""
    if not words:
        sys.stderr.write(f"scontrol: error: {needs}\n")
        return None
    try:
        return expand_hostlist(",".join(words))
    except ValueError as exc:
        sys.stderr.write(f"scontrol: error: Invalid hostlist: {words[0]} ({exc})\n")
        return None


def show_hostnames(words: list[str]) -> int:
    """``scontrol show hostnames <hostlist>``: one name a line (no controller needed)."""
    names = _host_names(words, "show hostnames needs a hostlist")
    if names is None:
        return 1
    sys.stdout.write("".join(f"{n}\n" for n in names))
    return 0


def cmd_ping(client, words: list[str], opts: Opts) -> int:
    """``scontrol ping``: ``Slurmctld(primary) at HOST is UP`` when the controller answers
    (any answer: it is up even if it refuses this user), else DOWN and exit 1, with
    scontrol's banner for root.  HOST is SlurmctldHost's name, as configured."""
    from cli.client import ApiError, ConnectError  # noqa: PLC0415

    host, up = client.host, True
    try:
        options = (client.get("/api/config/") or {}).get("options") or {}
        configured = options.get("SlurmctldHost") or options.get("ControlMachine")
        if isinstance(configured, list):
            configured = configured[0] if configured else None
        if configured:
            host = str(configured).split("(", 1)[0].strip() or host
    except ApiError:
        pass
    except ConnectError:
        up = False
    sys.stdout.write(f"Slurmctld(primary) at {host} is {'UP' if up else 'DOWN'}\n")
    if not up and os.getuid() == 0:
        sys.stdout.write("*****************************************\n")
        sys.stdout.write("** RESTORE SLURMCTLD DAEMON TO SERVICE **\n")
        sys.stdout.write("*****************************************\n")
    return 0 if up else 1


def show_hostlist(words: list[str], *, sort: bool) -> int:
    """``scontrol show hostlist[sorted] <names>``: the names folded into one hostlist
    (sorted first for hostlistsorted; no controller needed)."""
    names = _host_names(words, "show hostlist needs a list of names")
    if names is None:
        return 1
    if sort:
        names = sorted(names, key=natural_key)
    sys.stdout.write(fold_ordered(names) + "\n")
    return 0


def cmd_version(client, words: list[str], opts: Opts) -> int:
    sys.stdout.write(VERSION_LINE)
    return 0


def _scontrol_top(client, words: list[str], opts: Opts) -> int:
    from cli.scontrol_top import cmd_top  # noqa: PLC0415 - only scontrol top pays for it

    return cmd_top(client, words, opts)


def _scontrol_wait_job(client, words: list[str], opts: Opts) -> int:
    from cli.scontrol_wait_job import cmd_wait_job  # noqa: PLC0415 - only scontrol wait_job pays for it

    return cmd_wait_job(client, words, opts)


def _scontrol_setdebug(client, words: list[str], opts: Opts) -> int:
    from cli.scontrol_setdebug import cmd_setdebug  # noqa: PLC0415 - only scontrol setdebug pays for it

    return cmd_setdebug(client, words, opts)


def _scontrol_notify(client, words: list[str], opts: Opts) -> int:
    from cli.scontrol_notify import cmd_notify  # noqa: PLC0415 - only scontrol notify pays for it

    return cmd_notify(client, words, opts)


# scontrol <verb>: add create, delete, power, ... here.
VERBS: dict[str, Callable[..., int]] = {
    "show": cmd_show,
    "update": cmd_update,
    "reconfigure": cmd_reconfigure,
    "version": cmd_version,
    "ping": cmd_ping,
    "power": cmd_power,
    # Slurm's keywords, taken by any prefix of three letters or more ("reboot").
    "reboot_nodes": cmd_reboot,
    "cancel_reboot": cmd_cancel_reboot,
    "create": cmd_create,
    "delete": cmd_delete,
    "write": batch_script.cmd_write,
    "top": _scontrol_top,
    "notify": _scontrol_notify,
    "wait_job": _scontrol_wait_job,
    "setdebug": _scontrol_setdebug,
    **{verb: job_action(verb) for verb in JOB_ACTIONS},
}
NO_CLIENT = frozenset({"version"})
# Keywords Slurm takes only whole (xstrncasecmp with MAX(len, 3) on a three-letter word).
WHOLE_WORDS = frozenset({"top"})


def build_parser():
    p = make_parser(PROG, usage="%(prog)s [<OPTION>] [<COMMAND>]")
    add = p.add_argument
    add("-d", "--details", action="store_true", help="make show command print more details")
    add("--json", action="store_true", help="produce JSON output")
    clusters.add_option(p)
    add("-o", "--oneliner", action="store_true", help="print information one line per record")
    add("-Q", "--quiet", action="store_true", help="disable printing of error messages")
    add("-V", "--version", action="store_true", help="print version information and exit")
    add(
        "command",
        nargs="...",
        help="show, update, hold, release, requeue, requeuehold, suspend, resume, top, notify, reconfigure",
    )
    return p


GLOBAL_FLAGS = frozenset(
    {"-d", "--details", "--json", "-o", "--oneliner", "-Q", "--quiet", "-V", "--version"}
)


def main(argv: list[str]) -> int:
    # GNU getopt permutes: `scontrol show job 12 -o` works in Slurm, so move
    # global flags found after the command in front of it.
    flags = [a for a in argv if a in GLOBAL_FLAGS]
    ns = build_parser().parse_args(flags + [a for a in argv if a not in GLOBAL_FLAGS])
    ns.argv = argv
    if ns.version:
        return cmd_version(None, [], Opts(ns))
    if not ns.command:
        sys.stderr.write("scontrol: error: no command given (interactive mode is not supported)\n")
        return 1
    verb = lookup(VERBS, ns.command[0])
    if verb == "show" and len(ns.command) > 1 and ns.command[1].lower() in ("hostnames", "hostname"):
        return show_hostnames(ns.command[2:])
    if verb == "show" and len(ns.command) > 1 and ns.command[1].lower() in ("hostlist", "hostlistsorted"):
        return show_hostlist(ns.command[2:], sort=ns.command[1].lower() == "hostlistsorted")
    if verb in WHOLE_WORDS and ns.command[0].lower() != verb:
        verb = None
    if verb is None:
        sys.stderr.write(f"invalid keyword: {ns.command[0]}\n")
        return 1
    client = None
    if verb not in NO_CLIENT:
        from cli.client import Client  # noqa: PLC0415

        client = Client()
        if ns.clusters:
            clusters.local_cluster(client, ns.clusters, PROG)
    return VERBS[verb](client, ns.command[1:], Opts(ns))
