"""squeue, sinfo and scontrol show job|node|partition with --json against the real
controller (cli.main against a live server): Slurm 23.11's shape, its data_parser
v0.0.40's keys in their order (src/plugins/data_parser/v0.0.40/parsers.c, tag
slurm-23-11-9-1) and their values from fsched's records."""

from __future__ import annotations

import json

import pytest

from cluster.models import Job
from cluster.services import agents
from cluster.services.scheduling import schedule_pass
from tests.cli.test_nice import submitted
from tests.cluster.test_nice import register

pytestmark = pytest.mark.django_db(transaction=True)


def words(text: str) -> list[str]:
    return text.split()


# PARSER_ARRAY(JOB_INFO), (NODE), (PARTITION_INFO) and (SINFO_DATA): each object's paths.
JOB_INFO = words("""account accrue_time admin_comment allocating_node array_job_id array_task_id
array_max_tasks array_task_string association_id batch_features batch_flag batch_host flags
burst_buffer burst_buffer_state cluster cluster_features command comment container
container_id contiguous core_spec thread_spec cores_per_socket billable_tres cpus_per_task
cpu_frequency_minimum cpu_frequency_maximum cpu_frequency_governor cpus_per_tres cron deadline
delay_boot dependency derived_exit_code eligible_time end_time excluded_nodes exit_code extra
failed_node features federation_origin federation_siblings_active federation_siblings_viable
gres_detail group_id group_name het_job_id het_job_id_set het_job_offset job_id job_resources
job_size_str job_state last_sched_evaluation licenses mail_type mail_user max_cpus max_nodes
mcs_label memory_per_tres name network nodes nice tasks_per_core tasks_per_tres tasks_per_node
tasks_per_socket tasks_per_board cpus node_count tasks partition prefer memory_per_cpu
memory_per_node minimum_cpus_per_node minimum_tmp_disk_per_node power/flags preempt_time
preemptable_time pre_sus_time hold priority profile qos reboot required_nodes minimum_switches
requeue resize_time restart_cnt resv_name scheduled_nodes selinux_context shared exclusive
oversubscribe show_flags sockets_per_board sockets_per_node start_time state_description
state_reason standard_error standard_input standard_output submit_time suspend_time
system_comment time_limit time_minimum threads_per_core tres_bind tres_freq tres_per_job
tres_per_node tres_per_socket tres_per_task tres_req_str tres_alloc_str user_id user_name
maximum_switch_wait_time wckey current_working_directory""")
NODE = words("""architecture burstbuffer_network_address boards boot_time cluster_name cores
specialized_cores cpu_binding cpu_load free_mem cpus effective_cpus specialized_cpus energy
external_sensors extra power features active_features gres gres_drained gres_used instance_id
instance_type last_busy mcs_label specialized_memory name next_state_after_reboot address
hostname state operating_system owner partitions port real_memory comment reason
reason_changed_at reason_set_by_user resume_after reservation alloc_memory alloc_cpus
alloc_idle_cpus tres_used tres_weighted slurmd_start_time sockets threads temporary_disk weight
tres version""")
PARTITION_INFO = words("""nodes/allowed_allocation accounts/allowed groups/allowed qos/allowed alternate
tres/billing_weights cluster cpus/task_binding defaults/memory_per_cpu
defaults/partition_memory_per_cpu defaults/partition_memory_per_node defaults/time
accounts/deny qos/deny grace_time defaults/job maximums/cpus_per_node maximums/cpus_per_socket
maximums/memory_per_cpu maximums/partition_memory_per_cpu maximums/partition_memory_per_node
maximums/nodes maximums/shares maximums/oversubscribe/jobs maximums/oversubscribe/flags
maximums/time minimums/nodes name nodes/configured node_sets maximums/over_time_limit
priority/job_factor priority/tier qos/assigned timeouts/resume partition/state suspend_time
timeouts/suspend cpus/total nodes/total tres/configured""")
SINFO_DATA = words("""port node/state nodes/allocated nodes/idle nodes/other nodes/total cpus/allocated
cpus/idle cpus/other cpus/total cpus/minimum cpus/maximum sockets/minimum sockets/maximum
cores/minimum cores/maximum threads/minimum threads/maximum disk/minimum disk/maximum
memory/minimum memory/maximum weight/minimum weight/maximum cpus/load/minimum
cpus/load/maximum memory/free/minimum memory/free/maximum cpus/per_node/max memory/allocated
features/total features/active gres/total gres/used cluster comment extra reason/description
reason/time reservation reason/user nodes/hostnames nodes/addresses nodes/nodes
partition""")

UNSET = {"set": False, "infinite": False, "number": 0}
INFINITE = {"set": False, "infinite": True, "number": 0}


def number(n: int) -> dict:
    return {"set": True, "infinite": False, "number": n}


def shape(paths: list[str]) -> dict:
    """The nested keys the paths make, in the order the plugin adds them."""
    out: dict = {}
    for path in paths:
        *parents, last = path.split("/")
        here = out
        for key in parents:
            here = here.setdefault(key, {})
        here[last] = None
    return out


def assert_shape(obj: dict, paths: list[str]) -> None:
    def walk(actual: dict, want: dict, where: str) -> None:
        assert list(actual) == list(want), where or "top"
        for key, sub in want.items():
            if sub is not None:
                walk(actual[key], sub, f"{where}/{key}")

    walk(obj, shape(paths), "")


def assert_meta(doc: dict, command: list[str]) -> None:
    meta = doc["meta"]
    assert meta["plugin"] == {
        "type": "",
        "name": "",
        "data_parser": "data_parser/v0.0.40",
        "accounting_storage": "",
    }
    assert meta["command"] == command
    assert meta["slurm"] == {
        "version": {"major": "23", "micro": "0", "minor": "11"},
        "release": "23.11.0",
        "cluster": "demo",
    }
    assert list(meta["client"]) == ["source", "user", "group"]
    assert (doc["errors"], doc["warnings"]) == ([], [])


def json_of(live_cli, *argv: str) -> dict:
    status, out, err = live_cli("alice", *argv)
    assert (status, err) == (0, ""), err
    return json.loads(out)


@pytest.fixture
def jobs(demo, users, live_cli) -> dict[str, int]:
    """A running job on node01, a held pending job, a job that failed with exit 3 and one
    killed by SIGKILL."""
    register()
    running = submitted(live_cli("alice", "sbatch", "-p", "debug", "-t", "20", "--wrap", "sleep 100"))
    schedule_pass()
    failed = submitted(live_cli("alice", "sbatch", "-p", "debug", "--wrap", "false"))
    killed = submitted(live_cli("alice", "sbatch", "-p", "debug", "--wrap", "sleep 100"))
    schedule_pass()
    for job_id, code, sig in ((failed, 3, 0), (killed, 0, 9)):
        job = Job.objects.get(pk=job_id)
        completion = {"job_id": job_id, "node": job.batch_host, "exit_code": code, "signal": sig}
        agents.job_completed(completion={**completion, "end_time": 0, "run": job.restart_count})
    held = submitted(live_cli("alice", "sbatch", "--hold", "-p", "batch", "--wrap", "true"))
    return {"running": running, "held": held, "failed": failed, "killed": killed}


def test_squeue_json_is_slurms_job_info_response(jobs, live_cli):
    doc = json_of(live_cli, "squeue", "--json")
    assert list(doc) == ["jobs", "last_backfill", "last_update", "meta", "errors", "warnings"]
    assert doc["last_backfill"] == doc["last_update"] == number(0)
    assert_meta(doc, ["squeue"])  # argv but its last word, as data_parser_cli_meta copies it
    by_id = {j["job_id"]: j for j in doc["jobs"]}
    assert set(by_id) == {jobs["running"], jobs["held"]}  # squeue's default: the active jobs
    for job in doc["jobs"]:
        assert_shape(job, JOB_INFO)

    run = by_id[jobs["running"]]
    assert run["job_state"] == ["RUNNING"]
    assert (run["user_name"], run["partition"], run["cluster"], run["qos"]) == (
        "alice",
        "debug",
        "demo",
        "normal",
    )
    assert (run["nodes"], run["batch_host"], run["state_reason"]) == ("node01", "node01", "None")
    assert run["time_limit"] == number(20)
    assert run["start_time"]["set"] and run["start_time"]["number"] > 0
    assert run["end_time"]["number"] == run["start_time"]["number"] + 20 * 60
    assert run["exit_code"] == {
        "status": ["SUCCESS"],
        "return_code": number(0),
        "signal": {"id": UNSET, "name": ""},
    }
    assert (run["cpus"], run["node_count"], run["tasks"]) == (number(1), number(1), number(1))
    assert run["tres_alloc_str"] == run["tres_req_str"] and run["tres_alloc_str"].startswith("cpu=1,")
    assert run["job_resources"] == {
        "nodes": "node01",
        "allocated_cores": 1,  # SelectTypeParameters=CR_Core_Memory
        "allocated_cpus": 0,
        "allocated_hosts": 1,
        "allocated_nodes": [],
    }
    assert run["array_task_id"] == UNSET and run["array_job_id"] == number(0)
    assert (run["hold"], run["batch_flag"], run["requeue"], run["nice"]) == (False, True, True, 0)
    assert (run["shared"], run["exclusive"], run["oversubscribe"]) == ([], [], True)  # NO_VAL16
    assert run["standard_output"].endswith(f"/slurm-{jobs['running']}.out")
    assert (run["flags"], run["mail_type"], run["job_size_str"], run["gres_detail"]) == ([], [], [], [])
    assert run["power"] == {"flags": []} and run["profile"] == ["NOT_SET"]
    assert run["show_flags"] == ["DETAIL"]  # squeue's --json asks for details (opts.c)
    # What a job that asked nothing of them holds: slurmctld's defaults as the plugin prints them.
    assert (run["mail_user"], run["core_spec"], run["thread_spec"]) == ("alice", 0, 32766)
    assert (run["tasks_per_core"], run["tasks_per_socket"], run["tasks_per_tres"]) == (
        INFINITE,
        INFINITE,
        number(0),
    )
    assert (run["max_cpus"], run["delay_boot"], run["cores_per_socket"]) == (number(0), number(0), UNSET)

    held = by_id[jobs["held"]]
    assert (held["job_state"], held["state_reason"], held["hold"]) == (["PENDING"], "JobHeldUser", True)
    assert held["priority"] == number(0)
    assert (held["nodes"], held["tres_alloc_str"], held["job_resources"]) == ("", "", {})
    assert held["billable_tres"] == UNSET and held["start_time"] == number(0)
    assert held["time_limit"] == number(60)  # batch's DefaultTime=1:00:00


def test_ended_jobs_carry_slurms_exit_codes(jobs, live_cli):
    doc = json_of(live_cli, "squeue", "--json", "-t", "all")
    by_id = {j["job_id"]: j for j in doc["jobs"]}
    failed, killed = by_id[jobs["failed"]], by_id[jobs["killed"]]
    assert failed["job_state"] == ["FAILED"]
    assert failed["exit_code"] == {
        "status": ["ERROR"],
        "return_code": number(3),
        "signal": {"id": UNSET, "name": ""},
    }
    assert killed["exit_code"] == {
        "status": ["SIGNALED"],
        "return_code": UNSET,
        "signal": {"id": number(9), "name": "KILL"},
    }
    assert killed["end_time"]["number"] > 0


def test_squeue_json_keeps_the_filters_and_ignores_the_format(jobs, live_cli):
    doc = json_of(live_cli, "squeue", "--json", "-u", "alice", "-t", "R")
    assert [j["job_id"] for j in doc["jobs"]] == [jobs["running"]]
    assert doc["meta"]["command"] == ["squeue", "--json", "-u", "alice", "-t"]
    assert json_of(live_cli, "squeue", "--json", "-p", "batch")["jobs"][0]["job_id"] == jobs["held"]
    assert json_of(live_cli, "squeue", "--json", "-u", "bob")["jobs"] == []
    # squeue.1: "Sorting and formatting arguments passed to other options are ignored".
    doc = json_of(live_cli, "squeue", "--json", "-o", "%bogus", "-S", "i")
    assert len(doc["jobs"]) == 2
    status, _, err = live_cli("alice", "squeue", "--json", "-t", "nosuch")
    assert status == 1 and "Invalid job state specified: nosuch" in err


def test_scontrol_show_job_json_is_the_same_record(jobs, live_cli):
    doc = json_of(live_cli, "scontrol", "show", "job", str(jobs["running"]), "--json")
    assert list(doc) == ["jobs", "last_backfill", "last_update", "meta", "errors", "warnings"]
    assert_meta(doc, ["scontrol", "show", "job", str(jobs["running"])])
    (job,) = doc["jobs"]
    assert_shape(job, JOB_INFO)
    from_squeue = json_of(live_cli, "squeue", "--json", "-j", str(jobs["running"]))["jobs"][0]
    # The show flags each command asked with: scontrol --json DETAIL, squeue -j ALL too.
    assert (job["show_flags"], from_squeue["show_flags"]) == (["DETAIL"], ["ALL", "DETAIL"])
    assert job | {"show_flags": None} == from_squeue | {"show_flags": None}
    status, _, err = live_cli("alice", "scontrol", "show", "job", "999999", "--json")
    assert (status, err) == (1, "slurm_load_jobs error: Invalid job id specified\n")


def test_scontrol_show_node_json_is_slurms_nodes_response(jobs, live_cli):
    doc = json_of(live_cli, "scontrol", "show", "node", "node01", "--json")
    assert list(doc) == ["nodes", "last_update", "meta", "errors", "warnings"]
    (node,) = doc["nodes"]
    assert_shape(node, NODE)
    assert (node["name"], node["address"], node["state"], node["partitions"]) == (
        "node01",
        "node01",
        ["MIXED"],
        ["debug"],
    )
    assert (node["cpus"], node["alloc_cpus"], node["alloc_idle_cpus"], node["real_memory"]) == (4, 1, 3, 2000)
    assert (node["temporary_disk"], node["weight"], node["port"]) == (1000, 1, 6818)
    assert node["features"] == node["active_features"] == ["rack1", "row1", "fast"]
    assert node["next_state_after_reboot"] == ["INVALID"] and node["boot_time"] == number(1)
    assert node["tres"] == "cpu=4,mem=2000M,billing=4" and node["tres_used"].startswith("cpu=1,")
    assert (node["free_mem"], node["cpu_load"]) == (UNSET, 4294967294)  # no agent has reported them
    assert node["energy"]["current_watts"] == UNSET and node["power"]["maximum_watts"] == UNSET
    everyone = json_of(live_cli, "scontrol", "show", "node", "--json")["nodes"]
    assert len(everyone) == 36 and [n["gres"] for n in everyone if n["name"] == "node05"] == ["gpu:tesla:4"]
    status, _, err = live_cli("alice", "scontrol", "show", "node", "nosuch", "--json")
    assert (status, err) == (1, "Node nosuch not found\n")


def test_scontrol_show_partition_json_is_slurms_partition_response(demo, users, live_cli):
    doc = json_of(live_cli, "scontrol", "show", "partition", "--json")
    assert list(doc) == ["partitions", "last_update", "meta", "errors", "warnings"]
    assert [p["name"] for p in doc["partitions"]] == ["debug", "batch", "long", "cloud"]
    for part in doc["partitions"]:
        assert_shape(part, PARTITION_INFO)
    (debug,) = json_of(live_cli, "scontrol", "show", "partition", "debug", "--json")["partitions"]
    assert debug == doc["partitions"][0]
    assert debug["nodes"] == {"allowed_allocation": "", "configured": "node[01-08]", "total": 8}
    assert (debug["maximums"]["time"], debug["defaults"]["time"]) == (number(30), number(10))
    assert (debug["maximums"]["nodes"], debug["partition"]["state"]) == (INFINITE, ["UP"])
    assert debug["priority"] == {"job_factor": 1, "tier": 2}
    assert debug["cpus"] == {"task_binding": 0, "total": 32}
    assert debug["tres"] == {"billing_weights": "", "configured": "cpu=32,node=8,billing=32"}
    assert debug["maximums"]["oversubscribe"] == {"jobs": 1, "flags": []}  # OverSubscribe=NO
    assert doc["partitions"][3]["suspend_time"] == number(60)  # cloud's SuspendTime=60
    assert doc["partitions"][0]["suspend_time"] == UNSET
    status, _, err = live_cli("alice", "scontrol", "show", "partition", "nosuch", "--json")
    assert (status, err) == (1, "Partition nosuch not found\n")


def test_sinfo_json_is_sinfos_lines(jobs, live_cli):
    doc = json_of(live_cli, "sinfo", "--json")
    assert list(doc) == ["sinfo", "meta", "errors", "warnings"]
    assert_meta(doc, ["sinfo"])
    entries = doc["sinfo"]
    for entry in entries:
        assert_shape(entry, SINFO_DATA)
        assert_shape(entry["partition"], PARTITION_INFO)
    lines = [(e["partition"]["name"], e["node"]["state"], e["nodes"]["total"]) for e in entries]
    # sinfo's lines: partition order, then decreasing state (MIXED before IDLE); with --json
    # also by GresUsed (sinfo's gres_used_flag), so node[05-08]'s GPUs make a line of their own.
    assert lines[:4] == [
        ("debug", ["MIXED"], 1),
        ("debug", ["IDLE"], 3),
        ("debug", ["IDLE"], 4),
        ("batch", ["IDLE"], 16),
    ]
    assert (entries[2]["nodes"]["nodes"][0], entries[2]["gres"]["total"]) == ("node05", "gpu:tesla:4")
    mixed = entries[0]
    assert mixed["nodes"]["nodes"] == ["node01"] and mixed["nodes"]["addresses"] == ["node01"]
    assert [mixed["nodes"][k] for k in ("allocated", "idle", "other", "total")] == [1, 0, 0, 1]
    assert (mixed["cpus"]["allocated"], mixed["cpus"]["idle"], mixed["cpus"]["total"]) == (1, 3, 4)
    assert (mixed["memory"]["minimum"], mixed["disk"]["maximum"], mixed["port"]) == (2000, 1000, 6818)
    assert mixed["cpus"]["per_node"]["max"] == INFINITE
    assert mixed["features"] == {"total": "rack1,row1,fast", "active": "rack1,row1,fast"}
    idle = entries[1]
    assert idle["nodes"]["nodes"] == ["node02", "node03", "node04"]
    assert (idle["nodes"]["idle"], idle["cpus"]["idle"], idle["cpus"]["allocated"]) == (3, 12, 0)
    # Slurm makes every partition's entry first: one none of whose nodes is listed keeps it empty.
    entries = json_of(live_cli, "sinfo", "--json", "-n", "node01")["sinfo"]
    assert [(e["partition"]["name"], e["nodes"]["nodes"]) for e in entries] == [
        ("debug", ["node01"]),
        ("batch", []),
        ("long", []),
        ("cloud", []),
    ]
    empty = entries[1]
    assert (empty["node"]["state"], empty["port"], empty["nodes"]["total"]) == (["UNKNOWN"], 0, 0)
    assert empty["cpus"]["per_node"]["max"] == number(0) and empty["memory"]["free"]["minimum"] == number(0)
    # -p and -N: one entry a node of that partition.
    per_node = json_of(live_cli, "sinfo", "--json", "-N", "-p", "batch")["sinfo"]
    assert [e["nodes"]["nodes"] for e in per_node] == [[f"node{i:02d}"] for i in range(9, 25)]
    assert {e["partition"]["name"] for e in per_node} == {"batch"}


def test_a_gpu_jobs_devices_and_a_completing_jobs_end(demo, users, live_cli):
    register()
    gpus = submitted(live_cli("alice", "sbatch", "-p", "debug", "--gres=gpu:tesla:2", "--wrap", "sleep 100"))
    plain = submitted(live_cli("alice", "sbatch", "-p", "debug", "--wrap", "sleep 100"))
    schedule_pass()
    job = Job.objects.get(pk=gpus)
    assert job.state == "RUNNING", job.reason
    by_id = {j["job_id"]: j for j in json_of(live_cli, "squeue", "--json")["jobs"]}
    assert by_id[gpus]["gres_detail"] == ["gpu:tesla:2(IDX:0-1)"]  # gres_build_job_details' form
    assert by_id[gpus]["tres_per_node"] == "gres/gpu:tesla:2"
    assert by_id[plain]["gres_detail"] == []
    # While its Epilog runs a job is COMPLETING: a flag on the state it ends in.
    Job.objects.filter(pk=plain).update(state="COMPLETING", final_state="CANCELLED")
    (completing,) = json_of(live_cli, "squeue", "--json", "-j", str(plain))["jobs"]
    assert completing["job_state"] == ["CANCELLED", "COMPLETING"]
