"""API representations of jobs, nodes and partitions (the contract in docs/api.md)."""

from __future__ import annotations

import copy
import functools
from typing import Any

from ClusterShell.NodeSet import NodeSet
from django.utils import timezone
from rest_framework import serializers

from cluster import visibility
from cluster.core import sharing, states
from cluster.core.gres import job_gres_tres
from cluster.core.job_times import expected_end
from cluster.core.outputs import expand_output_path
from cluster.models import Job, Node, Partition
from cluster.services import gres as gres_services
from slurmwords.durations import format_minutes

PRIVATE_FIELDS = ("std_out", "std_err", "std_in", "command", "work_dir")


class FieldsBuiltOnce:
    """A ModelSerializer whose fields are worked out from the model once per class, then
    copied for each serializer.

    ModelSerializer works them out again for every serializer made: each request of the
    job list (squeue's, and the benchmark's poll of ``?limit=1`` every 50 ms) paid for
    the sixty-odd fields' introspection, most of its CPU for a short page. The fields
    depend on the class and the model only, never on the request or the instance. The
    copies are shallow, where DRF deep-copies declared fields (itself nearly as dear as
    building them): binding a field to its serializer only sets attributes of the copy,
    and these serializers only represent (the API validates input with its own
    serializers and the services), which never changes what the copies share."""

    def get_fields(self) -> dict[str, Any]:
        cls = type(self)
        built = cls.__dict__.get("_fields_built")
        if built is None:
            built = super().get_fields()  # type: ignore[misc]
            cls._fields_built = built  # type: ignore[attr-defined]
        return {name: shallow_copy(field) for name, field in built.items()}


def shallow_copy(field: Any) -> Any:
    """``copy.copy(field)``: what the copy protocol gives for a field of plain attributes,
    without its lookups and its ``__reduce_ex__`` (a job serializer's seventy-three copies
    took 128 us of a 2.3 ms ``?limit=1`` page, 36 us this way). A class that customizes
    copying or keeps slots takes ``copy.copy`` itself."""
    kind = type(field)
    if not _copied_plainly(kind):
        return copy.copy(field)
    new = object.__new__(kind)  # Field.__new__ only records _args and _kwargs, copied below
    new.__dict__.update(field.__dict__)
    return new


@functools.cache
def _copied_plainly(kind: type) -> bool:
    """Whether ``copy.copy`` of a ``kind`` is a new instance with its ``__dict__`` copied."""
    return (
        not hasattr(kind, "__copy__")
        and not hasattr(kind, "__setstate__")
        and kind.__reduce_ex__ is object.__reduce_ex__
        and kind.__reduce__ is object.__reduce__
        and kind.__getstate__ is object.__getstate__
        and not any("__slots__" in vars(k) for k in kind.__mro__)
        and kind.__new__ in (object.__new__, serializers.Field.__new__)
    )


class JobSerializer(FieldsBuiltOnce, serializers.ModelSerializer):
    job_id = serializers.IntegerField(source="id")
    state_compact = serializers.SerializerMethodField()
    num_cpus = serializers.IntegerField()
    time_limit_str = serializers.SerializerMethodField()
    run_time = serializers.SerializerMethodField()
    exit_code = serializers.SerializerMethodField()
    std_out = serializers.SerializerMethodField()
    std_err = serializers.SerializerMethodField()
    std_in = serializers.SerializerMethodField()
    hold = serializers.SerializerMethodField()
    tres = serializers.SerializerMethodField()
    restart_count = serializers.IntegerField()
    end_time = serializers.SerializerMethodField()
    licenses_alloc = serializers.SerializerMethodField()
    exclusive = serializers.SerializerMethodField()
    oversubscribe = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "job_id",
            "array_job_id",
            "array_task_id",
            "name",
            "user",
            "account",
            "qos",
            "wckey",
            "partition",
            "state",
            "state_compact",
            "reason",
            "reason_detail",
            "dependency",
            "priority",
            "nice",
            "min_nodes",
            "max_nodes",
            "num_tasks",
            "cpus_per_task",
            "num_cpus",
            "mem_per_node",
            "time_limit",
            "time_limit_str",
            "licenses",
            "licenses_alloc",
            "gres",
            "submit_time",
            "eligible_time",
            "start_time",
            "end_time",
            "last_sched_eval",
            "started_by_backfill",
            "run_time",
            "exit_code",
            "max_rss_kb",
            "total_cpu_secs",
            "node_list",
            "batch_host",
            "req_nodes",
            "exc_nodes",
            "work_dir",
            "std_out",
            "std_err",
            "std_in",
            "command",
            "hold",
            "reservation",
            "begin_time",
            "requeue",
            "restart_count",
            "tres",
            "features",
            "array_max_tasks",
            "exclusive",
            "oversubscribe",
            "extra",
            "layout",
            "comment",
            "alloc_node",
            "alloc_sid",
            "open_mode",
            "time_min",
            "signal",
            "mem_per_cpu",
            "ntasks_per_node",
            "deadline",
            "get_user_env",
            "tres_per_job",
            "tres_per_task",
            "cpus_per_gpu",
            "gres_alloc",
            "batch",
            "mail_type",
            "mail_user",
            "final_state",
        ]

    def to_representation(self, instance: Job) -> dict:
        data = super().to_representation(instance)
        request = self.context.get("request")
        # The output paths, command and working directory are the owner's, its account's
        # coordinators' and staff's (cluster.visibility), as the console's job page shows them.
        if request is not None and not visibility.may_manage(request.user, instance):
            for name in PRIVATE_FIELDS:
                data[name] = None
        return data

    def get_end_time(self, job: Job) -> str | None:
        """The expected end while the job runs, as Slurm shows it (start + time limit)."""
        end = expected_end(job.start_time, job.end_time, job.time_limit)
        return end.isoformat() if end else None

    def get_licenses_alloc(self, job: Job) -> str:
        """What the job was charged when it started; a requeued, pending job holds nothing."""
        return "" if job.state == states.JobState.PENDING else job.licenses_alloc

    def get_exclusive(self, job: Job) -> str:
        return sharing.exclusive_text(job.exclusive)

    def get_oversubscribe(self, job: Job) -> str:
        return sharing.oversubscribe_text(job.exclusive, job.oversubscribe)

    def get_state_compact(self, job: Job) -> str:
        return states.JOB_STATE_COMPACT[states.JobState(job.state)]

    def get_time_limit_str(self, job: Job) -> str:
        return format_minutes(job.time_limit)

    def get_run_time(self, job: Job) -> int:
        if not job.start_time:
            return 0
        end = job.end_time or timezone.now()
        return max(0, int((end - job.start_time).total_seconds()))

    def get_exit_code(self, job: Job) -> str:
        return f"{job.exit_code}:{job.exit_signal}"

    def _path(self, job: Job, pattern: str, default: str) -> str:
        return expand_output_path(
            pattern or default,
            job_id=job.id,
            name=job.name,
            user=job.user,
            node=job.batch_host or "",
            array_job_id=job.array_job_id,
            array_task_id=job.array_task_id,
            work_dir=job.work_dir,
        )

    def _default_out(self, job: Job) -> str:
        return "slurm-%A_%a.out" if job.array_job_id is not None else "slurm-%j.out"

    def get_std_out(self, job: Job) -> str:
        return self._path(job, job.std_out, self._default_out(job))

    def get_std_err(self, job: Job) -> str:
        return self._path(job, job.std_err or job.std_out, self._default_out(job))

    def get_std_in(self, job: Job) -> str:
        return job.std_in or "/dev/null"

    def get_hold(self, job: Job) -> bool:
        return bool(job.hold)

    def get_tres(self, job: Job) -> str:
        nodes = len(job.alloc) or job.min_nodes
        mem = sum(v[1] for v in job.alloc.values()) if job.alloc else (job.mem_per_node or 0) * nodes
        text = f"cpu={job.num_cpus},mem={mem}M,node={nodes},billing={job.num_cpus}"
        # --gres is per node; the job's TRES count it on every node (gres/gpu=4 for 2 x gpu:2),
        # and once it runs, the devices it was given (cluster/core/gres.py).
        gres = job_gres_tres(
            job.gres,
            job.tres_per_job,
            job.tres_per_task,
            nodes=nodes,
            tasks=job.num_tasks,
            alloc=job.gres_alloc if job.alloc else None,  # a requeued job's are an earlier run's
        )
        return text + "".join(f",gres/{name}={count}" for name, count in sorted(gres.items()))


class JobSubmitSerializer(serializers.Serializer):
    """The sbatch request (validated by the job_submit service; listed here for the schema)."""

    script = serializers.CharField(required=False, allow_blank=True)
    wrap = serializers.CharField(required=False)
    argv = serializers.ListField(child=serializers.CharField(), required=False)
    name = serializers.CharField(required=False)
    partition = serializers.CharField(required=False)
    nodes = serializers.CharField(required=False)
    ntasks = serializers.CharField(required=False)
    cpus_per_task = serializers.CharField(required=False)
    mem = serializers.CharField(required=False)
    time = serializers.CharField(required=False)
    account = serializers.CharField(required=False)
    qos = serializers.CharField(required=False)
    output = serializers.CharField(required=False)
    error = serializers.CharField(required=False)
    input = serializers.CharField(required=False)
    work_dir = serializers.CharField(required=False)
    nodelist = serializers.CharField(required=False)
    exclude = serializers.CharField(required=False)
    hold = serializers.BooleanField(required=False)
    licenses = serializers.CharField(required=False)
    gres = serializers.CharField(required=False)
    reservation = serializers.CharField(required=False)
    begin = serializers.CharField(required=False)
    array = serializers.CharField(required=False)
    requeue = serializers.BooleanField(required=False)
    environment = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    test_only = serializers.BooleanField(required=False)
    constraint = serializers.CharField(required=False)
    wckey = serializers.CharField(required=False)
    exclusive = serializers.BooleanField(required=False)
    oversubscribe = serializers.BooleanField(required=False)
    extra = serializers.CharField(required=False)
    layout = serializers.CharField(required=False)
    nice = serializers.IntegerField(required=False, help_text="sbatch --nice: -2147483645 to 2147483645")
    comment = serializers.CharField(required=False, help_text="sbatch --comment")
    alloc_node = serializers.CharField(required=False, help_text="the submitting host (AllocNode)")
    alloc_sid = serializers.IntegerField(required=False, help_text="the submitting session (Sid)")
    open_mode = serializers.CharField(required=False, help_text="sbatch --open-mode: append or truncate")
    time_min = serializers.CharField(required=False, help_text="sbatch --time-min")
    signal = serializers.CharField(required=False, help_text="sbatch --signal=[{R|B}:]<sig_num>[@sig_time]")
    mem_per_cpu = serializers.CharField(required=False, help_text="sbatch --mem-per-cpu (not with mem)")
    ntasks_per_node = serializers.CharField(required=False, help_text="sbatch --ntasks-per-node")
    deadline = serializers.CharField(required=False, help_text="sbatch --deadline (as begin)")
    get_user_env = serializers.CharField(required=False, help_text="sbatch --get-user-env: [timeout][S|L]")
    gpus = serializers.CharField(required=False, help_text="sbatch --gpus/-G: [type:]count for the whole job")
    gpus_per_node = serializers.CharField(required=False, help_text="sbatch --gpus-per-node: [type:]count")
    gpus_per_task = serializers.CharField(required=False, help_text="sbatch --gpus-per-task: [type:]count")
    cpus_per_gpu = serializers.CharField(required=False, help_text="sbatch --cpus-per-gpu")
    mail_type = serializers.CharField(required=False, help_text="sbatch --mail-type: BEGIN,END,..., ALL")
    mail_user = serializers.CharField(required=False, help_text="sbatch --mail-user (default: the user)")


class NodeSerializer(FieldsBuiltOnce, serializers.ModelSerializer):
    state = serializers.CharField()
    state_sinfo = serializers.CharField()
    state_short = serializers.CharField()
    flags = serializers.SerializerMethodField()
    cpus_alloc = serializers.IntegerField(source="alloc_cpus")
    alloc_memory = serializers.IntegerField(source="alloc_mem")
    partitions = serializers.SerializerMethodField()
    agent = serializers.CharField(source="agent_id")
    extra = serializers.CharField(source="extra_text")
    alloc_tres = serializers.SerializerMethodField()
    cfg_tres = serializers.SerializerMethodField()
    next_state = serializers.SerializerMethodField()
    gres_used = serializers.SerializerMethodField()

    class Meta:
        model = Node
        fields = [
            "name",
            "state",
            "state_sinfo",
            "state_short",
            "base_state",
            "flags",
            "cpus",
            "cpus_alloc",
            "real_memory",
            "tmp_disk",
            "alloc_memory",
            "reported_cpus",
            "reported_memory",
            "arch",
            "os",
            "slurmd_version",
            "weight",
            "features",
            "active_features",
            "gres",
            "partitions",
            "reason",
            "reason_user",
            "reason_time",
            "boot_time",
            "slurmd_start_time",
            "last_contact",
            "last_busy",
            "agent",
            "suspend_time",
            "cpu_load",
            "free_mem",
            "sockets",
            "cores_per_socket",
            "threads_per_core",
            "alloc_tres",
            "cfg_tres",
            "gres_used",
            "instance_id",
            "instance_type",
            "extra",
            "next_state",
        ]

    def get_flags(self, node: Node) -> list[str]:
        return states.flag_names(node.flags, node.base_state)

    def get_partitions(self, node: Node) -> list[str]:
        membership = self.context.get("membership")
        if membership is None:
            membership = partition_membership()
            self.context["membership"] = membership
        return membership.get(node.name, [])

    def _gres(self, node: Node) -> tuple[str, str, str]:
        """(GresUsed=, CfgTRES's and AllocTRES's gres/ parts); the holding jobs' devices
        are read once for a whole list."""
        if not node.gres:
            return "", "", ""
        usage = self.context.get("gres_usage")
        if usage is None:
            usage = self.context["gres_usage"] = gres_services.node_usage()
        return gres_services.node_tres(node.gres, usage.get(node.name))

    def get_gres_used(self, node: Node) -> str:
        return self._gres(node)[0]

    def get_alloc_tres(self, node: Node) -> str:
        gres = self._gres(node)[2]
        if not node.alloc_cpus:
            return gres.lstrip(",")
        return f"cpu={node.alloc_cpus},mem={node.alloc_mem}M{gres}"

    def get_next_state(self, node: Node) -> str:
        """scontrol reboot's nextstate while the reboot is pending or issued (Slurm's
        NextState=): DOWN, RESUME, or UNDRAIN for an ASAP reboot without one; else ""."""
        if not node.flags & (states.NodeFlag.REBOOT_REQUESTED | states.NodeFlag.REBOOT_ISSUED):
            return ""
        return node.reboot_next_state or ("UNDRAIN" if node.reboot_undrain else "")

    def get_cfg_tres(self, node: Node) -> str:
        return f"cpu={node.cpus},mem={node.real_memory}M,billing={node.cpus}{self._gres(node)[1]}"


def partition_membership() -> dict[str, list[str]]:
    membership: dict[str, list[str]] = {}
    for name, nodes in Partition.objects.values_list("name", "nodes"):
        for node in NodeSet(nodes or ""):
            membership.setdefault(node, []).append(name)
    return membership


class PartitionSerializer(FieldsBuiltOnce, serializers.ModelSerializer):
    default = serializers.BooleanField(source="is_default")
    node_names = serializers.SerializerMethodField()
    max_time_str = serializers.SerializerMethodField()
    total_cpus = serializers.SerializerMethodField()
    total_nodes = serializers.SerializerMethodField()

    class Meta:
        model = Partition
        fields = [
            "name",
            "nodes",
            "node_names",
            "default",
            "state",
            "max_time",
            "max_time_str",
            "default_time",
            "max_nodes",
            "min_nodes",
            "priority_tier",
            "priority_job_factor",
            "total_cpus",
            "total_nodes",
            "extra",
        ]

    def _names(self, p: Partition) -> list[str]:
        return list(NodeSet(p.nodes or ""))

    def get_node_names(self, p: Partition) -> list[str]:
        return self._names(p)

    def get_max_time_str(self, p: Partition) -> str:
        return format_minutes(p.max_time)

    def get_total_nodes(self, p: Partition) -> int:
        return len(self._names(p))

    def get_total_cpus(self, p: Partition) -> int:
        cpus = self.context.get("cpus")
        if cpus is None:
            cpus = dict(Node.objects.values_list("name", "cpus"))
            self.context["cpus"] = cpus
        return sum(cpus.get(n, 0) for n in self._names(p))
