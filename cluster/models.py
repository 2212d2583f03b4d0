"""The cluster's state: nodes, partitions, jobs, and the event log the console reads."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable

from django.conf import settings
from django.db import connection, models

from cluster import log_levels
from cluster.core import states
from cluster.core.states import JobState, NodeBase, NodeFlag


class ClusterConfig(models.Model):
    """The configuration in force (one row), so every process sees a reconfigure.

    Nearly every request and cycle reads it, so each process keeps the row it read last
    and, on the next read, only asks the database for the row's ``revision`` (a new random
    stamp at every save, whoever saves: a reconfigure, ``scontrol update``, another
    process): one indexed one-column read instead of a whole ORM query.
    """

    cluster_name = models.CharField(max_length=64, default="cluster")
    options = models.JSONField(default=dict)
    licenses = models.JSONField(default=dict)
    files = models.JSONField(default=list)
    loaded_at = models.DateTimeField(null=True)
    version = models.PositiveIntegerField(default=0)
    revision = models.CharField(max_length=32, default="", editable=False)

    def __str__(self) -> str:
        return f"{self.cluster_name} (v{self.version})"

    def save(self, *args: object, update_fields: Iterable[str] | None = None, **kwargs: object) -> None:
        _noted.value = None  # this request's own change: what it noted before is old now
        self.revision = uuid.uuid4().hex
        if update_fields is not None:
            update_fields = {*update_fields, "revision"}
        super().save(*args, update_fields=update_fields, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def revision_sql(cls) -> str:
        """The statement that reads the revision (also a subquery of another statement)."""
        table = connection.ops.quote_name(cls._meta.db_table)
        return f"SELECT revision FROM {table} WHERE id = 1"  # noqa: S608 - the model's table

    @classmethod
    def note_revision(cls, revision: str | None) -> None:
        """The revision another statement of this request read just now: the next
        :meth:`current` of this thread takes it instead of a round trip of its own."""
        _noted.value = (connection.alias, revision, time.monotonic())

    @staticmethod
    def forget_noted_revision(**_: object) -> None:
        """At each request's start and end: a revision noted by another request is never
        used."""
        _noted.value = None

    @classmethod
    def current(cls) -> ClusterConfig:
        """The configuration in force, shared read-only by this process's threads: to
        change it, use :meth:`for_update`."""
        cached = _config_cache.get(connection.alias)
        noted = getattr(_noted, "value", None)
        _noted.value = None  # used once: a later call in the same request reads again
        if noted is not None and noted[0] == connection.alias and time.monotonic() - noted[2] < _NOTED_FOR:
            row: tuple[str, ...] | None = None if noted[1] is None else (noted[1],)
        else:
            with connection.cursor() as cursor:
                cursor.execute(cls.revision_sql())
                row = cursor.fetchone()
        if cached is not None and row is not None and cached.revision == row[0]:
            return cached
        fresh = cls.objects.get_or_create(pk=1)[0]
        _config_cache[connection.alias] = fresh
        log_levels.configured(fresh.options)
        return fresh

    @classmethod
    def touch(cls) -> None:
        """A new revision, nothing else changed: for a change of state that processes cache
        by the revision (an extension's, such as the limits in force), so that the one read
        of the revision per request tells every cache whether it is current."""
        _noted.value = None
        cls.objects.filter(pk=1).update(revision=uuid.uuid4().hex)

    @classmethod
    def for_update(cls) -> ClusterConfig:
        """The row, read afresh (and locked where the database can) for a change."""
        return cls.objects.select_for_update().get_or_create(pk=1)[0]

    def option_int(self, key: str, default: int) -> int:
        try:
            return int(self.options.get(key, default))
        except (TypeError, ValueError):
            return default


_config_cache: dict[str, ClusterConfig] = {}
# A revision read by another statement of the request running on this thread (the token
# check's), with when; older than _NOTED_FOR seconds it is not used.
_noted = threading.local()
_NOTED_FOR = 1.0


class Node(models.Model):
    name = models.CharField(max_length=64, unique=True)
    # Configured (slurm.conf) resources; the scheduler uses these.
    cpus = models.PositiveIntegerField(default=1)
    real_memory = models.PositiveIntegerField(default=1, help_text="MB")
    tmp_disk = models.PositiveIntegerField(default=0, help_text="MB (slurm.conf TmpDisk)")
    sockets = models.PositiveIntegerField(default=1)
    cores_per_socket = models.PositiveIntegerField(default=1)
    threads_per_core = models.PositiveIntegerField(default=1)
    weight = models.PositiveIntegerField(default=1)
    features = models.CharField(max_length=512, blank=True, default="")
    active_features = models.CharField(max_length=512, blank=True, default="")
    gres = models.CharField(max_length=512, blank=True, default="")
    conf_state = models.CharField(max_length=16, default="UNKNOWN")
    suspend_time = models.IntegerField(null=True, blank=True, help_text="seconds; -1 = INFINITE")
    in_conf = models.BooleanField(default=True, help_text="defined in slurm.conf (not dynamic)")
    # What the agent reported.
    reported_cpus = models.PositiveIntegerField(null=True, blank=True)
    reported_memory = models.PositiveIntegerField(null=True, blank=True)
    # What the node's agent reports of its host, as slurmd does (scontrol's Arch=, OS=,
    # Version=); empty until it registers.
    arch = models.CharField(max_length=64, blank=True, default="")
    os = models.CharField(max_length=256, blank=True, default="")
    slurmd_version = models.CharField(max_length=64, blank=True, default="")
    boot_time = models.DateTimeField(null=True, blank=True)
    slurmd_start_time = models.DateTimeField(null=True, blank=True)
    last_contact = models.DateTimeField(null=True, blank=True)
    last_busy = models.DateTimeField(null=True, blank=True)
    agent_id = models.CharField(max_length=128, blank=True, default="")
    cpu_load = models.FloatField(null=True, blank=True)
    free_mem = models.PositiveIntegerField(null=True, blank=True)
    # State as Slurm keeps it: one base state plus flags.
    base_state = models.CharField(
        max_length=16, choices=[(s.value, s.value) for s in NodeBase], default=NodeBase.UNKNOWN
    )
    flags = models.PositiveIntegerField(default=0)
    alloc_cpus = models.PositiveIntegerField(default=0)
    alloc_mem = models.PositiveIntegerField(default=0)
    reason = models.CharField(max_length=256, blank=True, default="")
    reason_user = models.CharField(max_length=64, blank=True, default="")
    reason_time = models.DateTimeField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    # Power saving (Slurm's power_save.html): when the current POWERING_UP / POWERING_DOWN /
    # POWERED_DOWN state began (ResumeTimeout and SuspendTimeout count from it), and an
    # ``Action=`` waiting for the next power cycle.
    power_entered = models.DateTimeField(null=True, blank=True)
    power_action = models.CharField(max_length=64, blank=True, default="")
    # scontrol reboot: the state the node takes when it registers after the reboot (Slurm's
    # NextState: "" keeps its drain, RESUME, DOWN), whether ASAP drained it (the drain is
    # undone then), and when the reboot was issued (ResumeTimeout counts from it).
    reboot_next_state = models.CharField(max_length=16, blank=True, default="")
    reboot_undrain = models.BooleanField(default=False)
    reboot_issued_at = models.DateTimeField(null=True, blank=True)
    # Cloud accounting, as ``scontrol update NodeName=... InstanceId= InstanceType= Extra=``.
    instance_id = models.CharField(max_length=128, blank=True, default="")
    instance_type = models.CharField(max_length=128, blank=True, default="")
    extra_text = models.TextField(blank=True, default="", help_text="Slurm's node Extra string")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def state(self) -> str:
        return states.long_state(self.base_state, self.flags)

    @property
    def state_sinfo(self) -> str:
        return states.sinfo_long(self.base_state, self.flags)

    @property
    def state_short(self) -> str:
        return states.sinfo_short(self.base_state, self.flags)

    def has(self, flag: NodeFlag) -> bool:
        return bool(self.flags & flag)


class Partition(models.Model):
    name = models.CharField(max_length=64, unique=True)
    nodes = models.TextField(blank=True, default="", help_text="hostlist expression")
    is_default = models.BooleanField(default=False)
    state = models.CharField(max_length=16, default="UP")
    max_time = models.PositiveIntegerField(null=True, blank=True, help_text="minutes; empty = UNLIMITED")
    default_time = models.PositiveIntegerField(null=True, blank=True)
    max_nodes = models.PositiveIntegerField(null=True, blank=True)
    min_nodes = models.PositiveIntegerField(default=0)
    priority_tier = models.PositiveIntegerField(default=1)
    priority_job_factor = models.PositiveIntegerField(default=1)
    extra = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name


class Job(models.Model):
    # Job ids are Slurm's: allocated from a counter, never reused.
    id = models.BigIntegerField(primary_key=True)
    array_job_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    array_task_id = models.PositiveIntegerField(null=True, blank=True)
    array_max_tasks = models.PositiveIntegerField(null=True, blank=True, help_text="the %N throttle")
    name = models.CharField(max_length=256, default="")
    user = models.CharField(max_length=64, db_index=True)
    # Nothing looks jobs up by account row (``user`` is the name queries use): no index.
    submitter = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, db_index=False
    )
    account = models.CharField(max_length=64, blank=True, default="")
    qos = models.CharField(max_length=64, blank=True, default="normal")
    # sbatch --wckey; with TrackWCKey a default applied by the controller starts with '*'.
    wckey = models.CharField(max_length=256, blank=True, default="")
    partition = models.CharField(max_length=64)
    script = models.TextField(blank=True, default="")
    command = models.CharField(max_length=1024, blank=True, default="")
    argv = models.JSONField(default=list, blank=True)
    environment = models.JSONField(default=dict, blank=True)
    work_dir = models.CharField(max_length=1024, default="/tmp")  # noqa: S108 - only a default
    std_out = models.CharField(max_length=1024, blank=True, default="")
    std_err = models.CharField(max_length=1024, blank=True, default="")
    std_in = models.CharField(max_length=1024, blank=True, default="")
    min_nodes = models.PositiveIntegerField(default=1)
    max_nodes = models.PositiveIntegerField(null=True, blank=True)
    num_tasks = models.PositiveIntegerField(default=1)
    cpus_per_task = models.PositiveIntegerField(default=1)
    mem_per_node = models.PositiveIntegerField(null=True, blank=True, help_text="MB; empty = default")
    time_limit = models.PositiveIntegerField(null=True, blank=True, help_text="minutes; empty = partition's")
    licenses = models.CharField(max_length=512, blank=True, default="")
    # What the job was charged when it started (Slurm's hres.html, "Runtime Updates"): HRES
    # layers with amounts, and the cluster licenses it took; released by recomputing
    # usage from the running jobs' values, so it is exactly what was taken.
    licenses_alloc = models.TextField(blank=True, default="")
    gres = models.CharField(max_length=512, blank=True, default="", help_text="--gres, e.g. gpu:2 (per node)")
    # GPUs and other GRES (cluster/core/gres.py): --gpus for the whole job and --gpus-per-task
    # (gpu[:type]:N), --cpus-per-gpu, and the devices given, {node: [[name, type, count, [idx]]]}.
    tres_per_job = models.CharField(max_length=128, blank=True, default="")
    tres_per_task = models.CharField(max_length=128, blank=True, default="")
    cpus_per_gpu = models.PositiveIntegerField(null=True, blank=True)
    gres_alloc = models.JSONField(default=dict, blank=True)
    req_nodes = models.TextField(blank=True, default="")
    exc_nodes = models.TextField(blank=True, default="")
    features = models.CharField(max_length=512, blank=True, default="")
    reservation = models.CharField(max_length=64, blank=True, default="")
    hold = models.CharField(max_length=8, blank=True, default="", help_text="'user', 'admin' or empty")
    begin_time = models.DateTimeField(null=True, blank=True)
    requeue = models.BooleanField(default=True)
    # --exclusive: NODE (whole nodes, shared with no other job), or "" (may share).
    exclusive = models.CharField(max_length=8, blank=True, default="")
    oversubscribe = models.BooleanField(default=False, help_text="--oversubscribe")
    extra = models.CharField(max_length=1024, blank=True, default="", help_text="--extra")
    layout = models.CharField(max_length=256, blank=True, default="", help_text="--layout")
    restart_count = models.PositiveIntegerField(default=0)
    # --dependency in Slurm's printed form with each term's state (cluster.core.dependencies):
    # the terms not yet fulfilled, "" when none.
    dependency = models.TextField(blank=True, default="")
    # sbatch's own options (slurmwords.job_options): Comment=, the output files' open mode
    # ("" is the default, truncate), TimeMin= in minutes, --signal as [R|B:]num@secs.
    comment = models.CharField(max_length=1024, blank=True, default="")
    # Where it was submitted from: the host and session of sbatch/salloc/srun
    # (scontrol show job's AllocNode:Sid=).
    alloc_node = models.CharField(max_length=255, blank=True, default="")
    alloc_sid = models.PositiveIntegerField(null=True, blank=True)
    open_mode = models.CharField(max_length=8, blank=True, default="")
    time_min = models.PositiveIntegerField(null=True, blank=True)
    signal = models.CharField(max_length=32, blank=True, default="")
    # --mem-per-cpu in MB (MinMemoryCPU=); mem_per_node then holds what it makes per node.
    mem_per_cpu = models.PositiveIntegerField(null=True, blank=True)
    # --ntasks-per-node: the most tasks a node holds (NtasksPerN:B:S:C=, SLURM_NTASKS_PER_NODE).
    ntasks_per_node = models.PositiveIntegerField(null=True, blank=True)
    # --deadline: a job that cannot end by then is removed, ending DEADLINE (by the pass).
    deadline = models.DateTimeField(null=True, blank=True)
    # --get-user-env as "<seconds><S|L>" ("" not asked): the agent loads the login environment.
    get_user_env = models.CharField(max_length=8, blank=True, default="")
    # False for an allocation-only job (salloc's, srun's outside an allocation): no script,
    # no process, no ``batch`` step (Slurm's batch_flag).
    batch = models.BooleanField(default=True)
    # --mail-type as its canonical comma list (slurmwords.mail; "" none) and --mail-user
    # ("": the job's user). A TIME_LIMIT_* type leaves the list once its mail is sent.
    mail_type = models.CharField(max_length=160, blank=True, default="")
    mail_user = models.CharField(max_length=256, blank=True, default="")

    # Indexed by Meta.indexes' (state, partition, id), which serves state-only queries too:
    # every index is one more page written per submission.
    state = models.CharField(
        max_length=16, choices=[(s.value, s.value) for s in JobState], default=JobState.PENDING
    )
    reason = models.CharField(max_length=64, default="None")
    reason_detail = models.CharField(max_length=512, blank=True, default="")
    # Time SUSPENDED or STOPPED, which does not count against the time limit (Slurm's
    # suspended time): the seconds of pauses ended, and when the current one began.
    paused_seconds = models.PositiveIntegerField(default=0)
    paused_at = models.DateTimeField(null=True, blank=True)
    priority = models.BigIntegerField(default=0)
    # scontrol update Priority=N by an operator: N, which the pass keeps instead of computing
    # one (slurmctld's direct_set_prio) until Priority=4294967295 (INFINITE) resets it to 0.
    # A column of its own: passes write ``priority`` and read this, so their writes do not
    # make the kept queue read the jobs again.
    priority_set = models.BigIntegerField(default=0)
    # sbatch --nice / scontrol update Nice=: subtracted from the priority the scheduler
    # computes (Slurm's nice, +/- 2147483645; negative only for operators).
    nice = models.IntegerField(default=0)
    submit_time = models.DateTimeField()
    eligible_time = models.DateTimeField(null=True, blank=True)
    start_time = models.DateTimeField(null=True, blank=True)
    # The pass that started it, as slurmctld's last_sched_eval and BACKFILL_SCHED flag
    # (scontrol's LastSchedEval=, Scheduler=Backfill).
    last_sched_eval = models.DateTimeField(null=True, blank=True)
    started_by_backfill = models.BooleanField(default=False)
    end_time = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(default=0)
    exit_signal = models.IntegerField(default=0)
    node_list = models.TextField(blank=True, default="")
    batch_host = models.CharField(max_length=64, blank=True, default="")
    alloc = models.JSONField(default=dict, blank=True, help_text="{node: [cpus, mem]} while holding nodes")
    # Launch bookkeeping: set when the agent says the process exists.
    launched = models.BooleanField(default=False)
    # When the launch left, if well after start_time: a pass's launches are sent when its
    # transaction commits, and a long pass would otherwise spend their BatchStartTimeout
    # (cluster/services/launch_watch.py) before they were sent.
    launch_sent = models.DateTimeField(null=True, blank=True)
    # PrologFlags=Alloc: the nodes whose allocation Prolog has not yet succeeded (the job
    # is CONFIGURING until none is left).
    prolog_nodes = models.JSONField(default=list, blank=True)
    kill_requested = models.DateTimeField(null=True, blank=True)
    final_state = models.CharField(max_length=16, blank=True, default="", help_text="state to record on exit")
    # What the agent sampled (agent/containment.py), reported with the completion: the
    # largest summed RSS of the job's processes and their CPU time. Null: not reported.
    max_rss_kb = models.PositiveBigIntegerField(null=True, blank=True)
    total_cpu_secs = models.FloatField(null=True, blank=True)

    class Meta:
        # (end_time): accounting's time window (cluster/accounting.py) skips the jobs that
        # ended before it without reading them.
        # (state, partition, id): the id makes it covering for the job list's page of
        # active jobs in id order (cluster/api/pagination.py), which read every active
        # job's row for its id (its primary key is not SQLite's rowid): 2.3-2.9 ms against
        # 0.15 with 550 active jobs, a statement of every ``GET /api/jobs/?limit=1``.
        indexes = [
            models.Index(fields=["state", "partition", "id"]),
            models.Index(fields=["end_time"]),
        ]

    def __str__(self) -> str:
        return str(self.id)

    @property
    def display_id(self) -> str:
        if self.array_job_id is not None and self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return str(self.id)

    @property
    def num_cpus(self) -> int:
        if self.alloc:
            return sum(v[0] for v in self.alloc.values())
        return self.num_tasks * self.cpus_per_task


class Reservation(models.Model):
    """``scontrol create reservation``: nodes and resources set aside for some users or accounts."""

    name = models.CharField(max_length=64, unique=True)
    start_time = models.DateTimeField()
    end_time = models.DateTimeField()
    nodes = models.TextField(blank=True, default="", help_text="hostlist expression")
    users = models.CharField(max_length=1024, blank=True, default="", help_text="comma list; -name excludes")
    accounts = models.CharField(max_length=1024, blank=True, default="")
    partition = models.CharField(max_length=64, blank=True, default="")
    flags = models.CharField(max_length=512, blank=True, default="")
    licenses = models.CharField(max_length=1024, blank=True, default="", help_text="e.g. natural(low1):30")
    created_by = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["start_time", "name"]

    def __str__(self) -> str:
        return self.name


class JobIdCounter(models.Model):
    """The next job id (one row); taken with a row lock so ids never repeat."""

    next_id = models.BigIntegerField(default=1)

    def __str__(self) -> str:
        return f"next job id {self.next_id}"


class Event(models.Model):
    """Job and node transitions, kept for the console and reports."""

    class Kind(models.TextChoices):
        JOB = "job"
        NODE = "node"
        CONFIG = "config"

    time = models.DateTimeField(db_index=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    job_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    node = models.CharField(max_length=64, blank=True, default="", db_index=True)
    old_state = models.CharField(max_length=64, blank=True, default="")
    new_state = models.CharField(max_length=64, blank=True, default="")
    reason = models.CharField(max_length=256, blank=True, default="")
    user = models.CharField(max_length=64, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-time", "-id"]

    def __str__(self) -> str:
        return f"{self.time:%Y-%m-%dT%H:%M:%S} {self.kind} {self.job_id or self.node} {self.new_state}"


class ApiToken(models.Model):
    """An API token, kept as a digest: the database never holds a token that works.

    A token reads ``<prefix>.<secret>``; the prefix finds the row, the SHA-256 of the whole
    token must match ``digest``. Tokens are long random strings, so a plain digest is as
    good as a slow password hash and keeps authentication to one indexed lookup.
    """

    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=64, blank=True, default="")
    created = models.DateTimeField()
    expires = models.DateTimeField(null=True, blank=True)
    revoked = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix} ({self.user_id})"


class SubmitKey(models.Model):
    """An ``Idempotency-Key`` of ``POST /api/jobs/``: the same key of the same user never
    creates a second job; a repeated request gets the first answer again."""

    user = models.CharField(max_length=64)
    key = models.CharField(max_length=128)
    response = models.JSONField(default=dict)
    created = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="submit_key_once_per_user")]

    def __str__(self) -> str:
        return f"{self.user}:{self.key}"


class SchedulerStats(models.Model):
    """sdiag's scheduler figures, one row shared by every process that runs passes (the
    embedded thread, or Celery workers on several machines): each pass adds itself with
    one UPDATE.  ``since`` is Slurm's "Data since": sdiag --reset and midnight UTC start
    the figures again."""

    since = models.DateTimeField()
    main_cycles = models.BigIntegerField(default=0)
    main_last_us = models.BigIntegerField(default=0)
    main_max_us = models.BigIntegerField(default=0)
    main_sum_us = models.BigIntegerField(default=0)
    main_depth_sum = models.BigIntegerField(default=0)
    bf_cycles = models.BigIntegerField(default=0)
    bf_last_us = models.BigIntegerField(default=0)
    bf_max_us = models.BigIntegerField(default=0)
    bf_sum_us = models.BigIntegerField(default=0)
    bf_last_depth = models.BigIntegerField(default=0)
    bf_depth_sum = models.BigIntegerField(default=0)
    bf_last_depth_try = models.BigIntegerField(default=0)
    bf_depth_try_sum = models.BigIntegerField(default=0)
    bf_queue_len = models.BigIntegerField(default=0)
    bf_queue_len_sum = models.BigIntegerField(default=0)
    bf_last_when = models.DateTimeField(null=True, blank=True)
    # When the last main pass ran (not an sdiag figure: a pending job's LastSchedEval).
    main_last_when = models.DateTimeField(null=True, blank=True)
    bf_backfilled_jobs = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"scheduler statistics since {self.since:%Y-%m-%dT%H:%M:%S}"


class OverviewSample(models.Model):
    """The dashboard's 24-hour trend: the cluster as the overview publisher saw it, one
    row every few minutes (cluster.overview.SAMPLE_EVERY), rows older than a day deleted.
    No other history holds these figures over time, and a row in the database is shared by
    every server process and outlives a restart, where a process's memory would not."""

    time = models.DateTimeField(db_index=True)
    jobs_running = models.PositiveIntegerField(default=0)
    jobs_pending = models.PositiveIntegerField(default=0)
    cpus_alloc = models.PositiveIntegerField(default=0)
    cpus_total = models.PositiveIntegerField(default=0)
    nodes_unavailable = models.PositiveIntegerField(default=0, help_text="down, drained or powered down")

    def __str__(self) -> str:
        return f"overview at {self.time:%Y-%m-%dT%H:%M:%S}"


# Allocation-only jobs' holders and job credentials, in a module of their own.
from cluster.allocation_models import AllocationHolder, JobCredential  # noqa: E402, F401
from cluster.run_models import JobRun  # noqa: E402, F401
from cluster.usage_models import StepStatistics, StepUsage  # noqa: E402, F401
