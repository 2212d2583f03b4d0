"""``squeue --json`` (and ``scontrol show job --json``): the API's jobs in Slurm 23.11's
shape, its data_parser v0.0.40's JOB_INFO keys in their order, each from what fsched
keeps and, for what it does not keep, the value Slurm prints for a field never set.

squeue's filters (``-u``, ``-t``, ``-p``, ``-j`` ...) still choose the jobs; its format and
sort options do not apply (squeue.1, ``--json``: "Sorting and formatting arguments passed
to other options are ignored; however, filtering arguments are still used")."""

from __future__ import annotations

import functools
import time

from cli.gres_fmt import tres_per_node
from slurmwords import data_parser as dp
from slurmwords.hostlists import expand_hostlist
from slurmwords.int_lists import fold_ints

# A uid or gid this host cannot name: Slurm's NO_VAL, as an unset id prints.
NO_ID = 0xFFFFFFFE

# fsched's job states that Slurm holds as a base state with a flag (JOB_STATE's array).
_STATE_FLAGS = {
    "CONFIGURING": ["RUNNING", "CONFIGURING"],
    "STOPPED": ["RUNNING", "STOPPED"],
    "REQUEUED": ["PENDING", "REQUEUED"],
}

# slurmwords.mail's names as JOB_MAIL_FLAGS spells them, in its order.
_MAIL = {
    "BEGIN": "BEGIN",
    "END": "END",
    "FAIL": "FAIL",
    "REQUEUE": "REQUEUE",
    "TIME_LIMIT": "TIME=100%",
    "TIME_LIMIT_90": "TIME=90%",
    "TIME_LIMIT_80": "TIME=80%",
    "TIME_LIMIT_50": "TIME=50%",
    "STAGE_OUT": "STAGE_OUT",
    "ARRAY_TASKS": "ARRAY_TASKS",
    "INVALID_DEPEND": "INVALID_DEPENDENCY",
}

# Slurm's job "shared" value for fsched's --exclusive word (JOB_SHARED_NONE/USER/MCS) and
# for --oversubscribe (JOB_SHARED_OK); a job that asked neither holds NO_VAL16.
_SHARED = {"NODE": ("none", "true"), "USER": ("user", "user"), "MCS": ("mcs", "mcs")}


def job_state(job: dict) -> list[str]:
    state = job.get("state") or "PENDING"
    if state == "COMPLETING":
        # The job has ended and its Epilog runs: COMPLETING is a flag on how it ended, and a
        # requeue's is a pending job with the REQUEUED flag (the flags in JOB_STATE's order).
        ended = job.get("final_state") or "COMPLETED"
        return ["PENDING", "REQUEUED", "COMPLETING"] if ended == "REQUEUED" else [ended, "COMPLETING"]
    return list(_STATE_FLAGS.get(state, [state]))


def _exit_pair(job: dict) -> tuple[int, int]:
    code, _, sig = str(job.get("exit_code") or "0:0").partition(":")
    try:
        return int(code), int(sig or 0)
    except ValueError:
        return 0, 0


@functools.cache  # one look-up a user, not one a job
def _ids(user: str) -> tuple[int, int, str]:
    """(uid, gid, group name) of a user name on this host, as scontrol's UserId= reads them."""
    try:
        import grp  # noqa: PLC0415
        import pwd  # noqa: PLC0415

        entry = pwd.getpwnam(user)
    except (ImportError, KeyError):
        return NO_ID, NO_ID, ""
    try:
        group = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        group = ""
    return entry.pw_uid, entry.pw_gid, group


def _sharing(job: dict) -> tuple[list[str], list[str], bool]:
    """(shared, exclusive, oversubscribe) as JOB_SHARED, JOB_EXCLUSIVE and BOOL16 print
    the job's shared value; NO_VAL16 matches no flag and is a true BOOL16."""
    word = job.get("exclusive") or ""
    if word in ("", "NO"):
        if job.get("oversubscribe") == "YES":
            return ["oversubscribe"], ["false"], True
        return [], [], True
    if word in _SHARED:
        shared, exclusive = _SHARED[word]
        return [shared], [exclusive], word != "NODE"
    return [], [], True


def _mail(job: dict) -> list[str]:
    asked = set(dp.csv(job.get("mail_type")))
    return [slurm for ours, slurm in _MAIL.items() if ours in asked]


def _node_count(job: dict, holding: bool) -> int:
    if holding and job.get("node_list"):
        try:
            return len(expand_hostlist(job["node_list"]))
        except ValueError:
            pass
    return job.get("min_nodes") or 1


def _gres_per_node(job: dict) -> str:
    return tres_per_node(job.get("gres"))


def _gres_detail(job: dict, holding: bool) -> list[str]:
    """JOB_INFO_GRES_DETAIL: each allocated node's devices, ``gpu:tesla:2(IDX:0-1)``
    (gres_ctld.c's gres_build_job_details), in the job's node order."""
    given = job.get("gres_alloc") or {}
    if not (holding and given and job.get("node_list")):
        return []
    try:
        nodes = expand_hostlist(job["node_list"])
    except ValueError:
        return []
    out = []
    for node in nodes:
        parts = []
        for name, kind, count, indices in given.get(node) or []:
            label = f"{name}:{kind}" if kind else name
            parts.append(f"{label}:{count}(IDX:{fold_ints(indices)})")
        if parts:
            out.append(",".join(parts))
    return out


def _job_resources(job: dict, holding: bool, cr_cpu: bool) -> dict:
    """JOB_RES: a job without an allocation has none (a NULL pointer, printed ``{}``).
    fsched keeps no core bitmap, so ``allocated_nodes`` is the "not enough info" ``[]``;
    its CPUs count as cores or as CPUs by SelectTypeParameters (ALLOCATED_CORES/CPUS)."""
    if not (holding and job.get("node_list")):
        return {}
    cpus = job.get("num_cpus") or 0
    return {
        "nodes": job["node_list"],
        "allocated_cores": 0 if cr_cpu else cpus,
        "allocated_cpus": cpus if cr_cpu else 0,
        "allocated_hosts": _node_count(job, holding),
        "allocated_nodes": [],
    }


def _accrue_time(job: dict) -> str | None:
    """A job accrues age from when it became eligible, so not before --begin's time
    (scontrol's AccrueTime=)."""
    eligible = job.get("eligible_time")
    try:
        return eligible if eligible and dp.epoch(eligible) <= time.time() else None
    except (TypeError, ValueError):
        return eligible


def _billing(tres: str) -> float | None:
    for item in (tres or "").split(","):
        key, _, value = item.partition("=")
        if key == "billing":
            try:
                return float(value)
            except ValueError:
                return None
    return None


def show_flags(ns, environ: dict | None = None) -> list[str]:
    """The show flags squeue asked with, which each record repeats (JOB_SHOW_FLAGS, in
    its order): ALL for -a, SQUEUE_ALL or a job list; DETAIL always with --json (opts.c);
    LOCAL for -M or SLURM_CLUSTERS, SQUEUE_LOCAL."""
    import os  # noqa: PLC0415

    env = os.environ if environ is None else environ
    flags = ["ALL"] if ns.all or ns.jobs or env.get("SQUEUE_ALL") is not None else []
    flags.append("DETAIL")
    if ns.clusters or env.get("SLURM_CLUSTERS") or env.get("SQUEUE_LOCAL") is not None:
        flags.append("LOCAL")
    return flags


def job(obj: dict, cluster: str = "", *, cr_cpu: bool = False, flags: list[str] | None = None) -> dict:
    """One API job as data_parser v0.0.40's JOB_INFO; ``cr_cpu``: SelectTypeParameters
    allocates CPUs (CR_CPU*), not cores; ``flags``: the show flags asked with
    (scontrol --json asks DETAIL)."""
    state = job_state(obj)
    holding = state[0] in ("RUNNING", "SUSPENDED") or "COMPLETING" in state
    started = bool(obj.get("start_time")) and state[0] != "PENDING"
    uid, gid, group = _ids(obj.get("user") or "")
    code, sig = _exit_pair(obj)
    shared, exclusive, oversubscribe = _sharing(obj)
    tres = dp.text(obj.get("tres"))
    mem_cpu, mem_node = obj.get("mem_per_cpu"), obj.get("mem_per_node")
    array_task = obj.get("array_task_id")
    time_limit = obj.get("time_limit")
    cpus_per_gpu = obj.get("cpus_per_gpu")
    return {
        "account": dp.text(obj.get("account")),
        "accrue_time": dp.timestamp(_accrue_time(obj)),
        "admin_comment": "",
        "allocating_node": dp.text(obj.get("alloc_node")),
        "array_job_id": dp.no_val(obj.get("array_job_id") or 0),
        "array_task_id": dp.no_val(array_task),
        "array_max_tasks": dp.no_val(obj.get("array_max_tasks") or 0),
        "array_task_string": "",
        "association_id": 0,
        "batch_features": "",
        "batch_flag": bool(obj.get("batch", True)),
        "batch_host": dp.text(obj.get("batch_host")),
        "flags": [],
        "burst_buffer": "",
        "burst_buffer_state": "",
        "cluster": cluster,
        "cluster_features": "",
        "command": dp.text(obj.get("command")),
        "comment": dp.text(obj.get("comment")),
        "container": "",
        "container_id": "",
        "contiguous": False,
        "core_spec": 0,
        # An unset core_spec is NO_VAL16, whose CORE_SPEC_THREAD bit THREAD_SPEC reads as a
        # thread count: 0xfffe without that bit.
        "thread_spec": 0x7FFE,
        "cores_per_socket": dp.no_val(None),
        "billable_tres": dp.float_no_val(_billing(tres) if started else None),
        "cpus_per_task": dp.no_val(obj.get("cpus_per_task")),
        "cpu_frequency_minimum": dp.no_val(None),
        "cpu_frequency_maximum": dp.no_val(None),
        "cpu_frequency_governor": dp.no_val(None),
        "cpus_per_tres": f"gres/gpu:{cpus_per_gpu}" if cpus_per_gpu else "",
        "cron": "",
        "deadline": dp.timestamp(obj.get("deadline")),
        "delay_boot": dp.no_val(0),
        "dependency": dp.text(obj.get("dependency")),
        "derived_exit_code": dp.exit_code(code, sig),
        "eligible_time": dp.timestamp(obj.get("eligible_time")),
        "end_time": dp.timestamp(obj.get("end_time")),
        "excluded_nodes": dp.text(obj.get("exc_nodes")),
        "exit_code": dp.exit_code(code, sig),
        "extra": dp.text(obj.get("extra")),
        "failed_node": "",
        "features": dp.text(obj.get("features")),
        "federation_origin": "",
        "federation_siblings_active": "",
        "federation_siblings_viable": "",
        "gres_detail": _gres_detail(obj, holding),
        "group_id": gid,
        "group_name": group,
        "het_job_id": dp.no_val(0),
        "het_job_id_set": "",
        "het_job_offset": dp.no_val(0),
        "job_id": obj.get("job_id") or 0,
        "job_resources": _job_resources(obj, holding, cr_cpu),
        "job_size_str": [],
        "job_state": state,
        "last_sched_evaluation": dp.timestamp(obj.get("last_sched_eval")),
        "licenses": dp.text(obj.get("licenses")),
        "mail_type": _mail(obj),
        "mail_user": dp.text(obj.get("mail_user") or obj.get("user")),  # slurmctld's default: the user
        "max_cpus": dp.no_val(0),
        "max_nodes": dp.no_val(obj.get("max_nodes") or 0),
        "mcs_label": "",
        "memory_per_tres": "",
        "name": dp.text(obj.get("name")),
        "network": "",
        "nodes": dp.text(obj.get("node_list")) if holding or obj.get("node_list") else "",
        "nice": obj.get("nice") or 0,
        "tasks_per_core": dp.no_val(None, infinite=True),
        "tasks_per_tres": dp.no_val(0),
        "tasks_per_node": dp.no_val(obj.get("ntasks_per_node") or 0),
        "tasks_per_socket": dp.no_val(None, infinite=True),
        "tasks_per_board": dp.no_val(0),
        "cpus": dp.no_val(obj.get("num_cpus") or 1),
        "node_count": dp.no_val(_node_count(obj, holding)),
        "tasks": dp.no_val(obj.get("num_tasks") or 1),
        "partition": dp.text(obj.get("partition")),
        "prefer": "",
        "memory_per_cpu": dp.no_val(mem_cpu if mem_cpu else None),
        "memory_per_node": dp.no_val(None if mem_cpu else (mem_node or 0)),
        "minimum_cpus_per_node": dp.no_val(obj.get("cpus_per_task") or 1),
        "minimum_tmp_disk_per_node": dp.no_val(0),
        "power": {"flags": []},
        "preempt_time": dp.timestamp(None),
        "preemptable_time": dp.timestamp(None),
        "pre_sus_time": dp.timestamp(None),
        "hold": bool(obj.get("hold")),
        "priority": dp.no_val(obj.get("priority") or 0),
        "profile": ["NOT_SET"],
        "qos": dp.text(obj.get("qos")),
        "reboot": False,
        "required_nodes": dp.text(obj.get("req_nodes")),
        "minimum_switches": 0,
        "requeue": bool(obj.get("requeue", True)),
        "resize_time": dp.timestamp(None),
        "restart_cnt": obj.get("restart_count") or 0,
        "resv_name": dp.text(obj.get("reservation")),
        "scheduled_nodes": dp.text(obj.get("sched_nodes")),
        "selinux_context": "",
        "shared": shared,
        "exclusive": exclusive,
        "oversubscribe": oversubscribe,
        "show_flags": list(flags or ["DETAIL"]),
        "sockets_per_board": 0,
        "sockets_per_node": dp.no_val(None),
        "start_time": dp.timestamp(obj.get("start_time")),
        "state_description": dp.text(obj.get("reason_detail")),
        "state_reason": dp.text(obj.get("reason") or "None"),
        "standard_error": dp.text(obj.get("std_err")),
        "standard_input": dp.text(obj.get("std_in")),
        "standard_output": dp.text(obj.get("std_out")),
        "submit_time": dp.timestamp(obj.get("submit_time")),
        "suspend_time": dp.timestamp(None),
        "system_comment": "",
        "time_limit": dp.no_val(time_limit, infinite=time_limit is None),
        "time_minimum": dp.no_val(obj.get("time_min") or 0),
        "threads_per_core": dp.no_val(None),
        "tres_bind": "",
        "tres_freq": "",
        "tres_per_job": f"gres/{obj['tres_per_job']}" if obj.get("tres_per_job") else "",
        "tres_per_node": _gres_per_node(obj),
        "tres_per_socket": "",
        "tres_per_task": f"gres/{obj['tres_per_task']}" if obj.get("tres_per_task") else "",
        "tres_req_str": tres,
        "tres_alloc_str": tres if started else "",
        "user_id": uid,
        "user_name": dp.text(obj.get("user")),
        "maximum_switch_wait_time": 0,
        "wckey": dp.text(obj.get("wckey")),
        "current_working_directory": dp.text(obj.get("work_dir")),
    }


def response(jobs: list[dict], context, flags: list[str] | None = None) -> dict:
    """OPENAPI_JOB_INFO_RESP. fsched keeps no time of its last backfill pass nor of the
    last change to its job list: both are the set 0 of a time never stamped."""
    body = {
        "jobs": [job(j, context.cluster, cr_cpu=context.cr_cpu, flags=flags) for j in jobs],
        "last_backfill": dp.timestamp(None),
        "last_update": dp.timestamp(None),
    }
    return dp.answer(body, context.meta())


def render(jobs: list[dict], context, flags: list[str] | None = None) -> str:
    """``context``: cli.json_meta.Context, the command and the controller's configuration;
    ``flags``: the show flags asked with (show_flags())."""
    return dp.dumps(response(jobs, context, flags))
