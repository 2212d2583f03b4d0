"""Obtain, hold and give back a job allocation: salloc's core, and srun's outside one.

``allocate(client, job_options, prog=...)`` submits an allocation-only job (no batch
script, no process, no ``batch`` step), tells on stderr what Slurm's salloc tells, waits
until the job runs on its nodes (its Prolog done), and yields an :class:`Allocation` with
the SLURM_* variables salloc sets.  While the ``with`` body runs, a thread renews the
holder's lease (cluster/core/allocation_leases.py): if this process dies, the controller
ends the allocation after the lease runs out, as Slurm's InactiveLimit ends one whose
salloc stopped answering.  On leaving, the allocation is released with
``Allocation.exit_code`` (or ``exit_signal``), the status Slurm's salloc records for its
command.

``job_options``: sbatch's options by their dest in ``cli.sbatch.OPTIONS`` (``partition``,
``nodes``, ``ntasks``, ``time``, ``mem``, ``job_name``, ``chdir``, ``export`` ...; None or
absent: not given).  The ones that name a batch script's files or array are not the
job's here (srun's ``-o/-e/-i`` are its step's) and are left out.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from cli.client import ApiError, Client, CliError, ConnectError
from slurmwords.int_lists import fold_repeats

POLL = 0.5  # seconds between looks at a pending request
# A request still pending this long without a pass's reason is said to be queued anyway.
QUEUED_AFTER = 5.0
PENDING = frozenset({"PENDING", "REQUEUED"})
GRANTED = frozenset({"RUNNING", "CONFIGURING", "SUSPENDED", "STOPPED"})
# sbatch's options that are a batch script's own, never an allocation's.
NOT_THE_JOBS = frozenset(
    {"array", "wrap", "output", "error", "input", "open_mode", "test_only", "parsable", "wait", "requeue"}
)


class Allocation:
    """A granted allocation: its job id and the SLURM_* variables salloc sets for it.

    Set ``exit_code`` (or ``exit_signal``) to the command's status before leaving the
    ``with``: the job ends with it.  ``revoked`` is set when the allocation ended under
    the holder (scancel, time limit); ``on_revoke`` is then called, from another thread.
    """

    __slots__ = ("env", "exit_code", "exit_signal", "job_id", "on_revoke", "revoked")

    def __init__(self, job_id: int, env: dict[str, str]) -> None:
        self.job_id = job_id
        self.env = env
        self.exit_code = 0
        self.exit_signal = 0
        self.revoked = threading.Event()
        self.on_revoke: Callable[[], None] | None = None


class AllocationRevoked(CliError):
    """The allocation was taken away (scancel, Ctrl-C while pending): Slurm's one line."""

    def __init__(self, prog: str, job_id: int) -> None:
        super().__init__(f"Job allocation {job_id} has been revoked.")
        self.prog = prog

    def render(self, prog: str) -> str:
        return f"{self.prog}: {self.message}"


def _say(prog: str, text: str, *, quiet: bool = False) -> None:
    """One of salloc's informational lines; -Q/--quiet keeps them, not errors, quiet."""
    if not quiet:
        # A closed stderr (``srun ... 2>&1 | head``) must not keep the allocation from being
        # given back: the line is lost, the release still happens.
        with suppress(OSError, ValueError):
            sys.stderr.write(f"{prog}: {text}\n")
            sys.stderr.flush()


def request_body(job_options: dict, *, environ: dict[str, str], cwd: str) -> dict:
    """The ``POST /api/jobs/`` body of an allocation request."""
    from cli.sbatch import BODY_FIELDS, export_environment, submitted_from  # noqa: PLC0415

    body: dict = {"allocation": True, "name": job_options.get("job_name") or "interactive"}
    for dest, field in BODY_FIELDS.items():
        if dest not in NOT_THE_JOBS and job_options.get(dest) is not None:
            body[field] = job_options[dest]
    chdir = job_options.get("chdir") or cwd
    body["work_dir"] = os.path.normpath(os.path.join(cwd, os.path.expanduser(chdir)))
    if job_options.get("hold"):
        body["hold"] = True
    body["environment"] = export_environment(job_options.get("export"), environ)
    body.update(submitted_from())
    return body


# ------------------------------------------------------------------ SLURM_* variables


def _natural(name: str) -> list[object]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def compressed(counts: list[int]) -> str:
    """Slurm's per-node list with repeats folded: ``[4, 4, 2]`` -> ``4(x2),2``."""
    return fold_repeats(counts)


def tasks_per_node(cpus: list[int], cpus_per_task: int, ntasks: int | None) -> list[int]:
    """How many tasks each node gets: as many as its CPUs hold (``-c`` each), and with
    ``-n`` that many in all, each node at least one, filled in node order (Slurm's block
    distribution)."""
    room = [max(1, c // max(1, cpus_per_task)) for c in cpus]
    if ntasks is None:
        return room
    tasks = [1] * len(cpus) if ntasks >= len(cpus) else [1] * ntasks + [0] * (len(cpus) - ntasks)
    left = ntasks - sum(tasks)
    for i, space in enumerate(room):
        extra = min(left, max(0, space - tasks[i]))
        tasks[i] += extra
        left -= extra
    i = 0
    while left > 0 and tasks:  # overcommitted: round robin
        tasks[i % len(tasks)] += 1
        left -= 1
        i += 1
    return tasks


def allocation_env(info: dict, job_options: dict, *, cwd: str, submit_host: str) -> dict[str, str]:
    """The SLURM_* variables Slurm's salloc sets for its command (salloc(1), OUTPUT
    ENVIRONMENT VARIABLES), from the renewal's answer about the granted job."""
    job = info["job"]
    alloc = info.get("alloc") or {}
    nodes = sorted(alloc, key=_natural) or [job.get("batch_host") or ""]
    cpus = [int(alloc.get(n, 1)) for n in nodes]
    node_list = str(job.get("node_list") or ",".join(nodes))
    cpus_per_task = int(job.get("cpus_per_task") or 1)
    ntasks = job_options.get("ntasks")
    env = {
        "SLURM_JOB_ID": str(job["job_id"]),
        "SLURM_JOBID": str(job["job_id"]),
        "SLURM_JOB_NAME": str(job.get("name") or ""),
        "SLURM_JOB_NODELIST": node_list,
        "SLURM_NODELIST": node_list,
        "SLURM_JOB_NUM_NODES": str(len(nodes)),
        "SLURM_NNODES": str(len(nodes)),
        "SLURM_JOB_CPUS_PER_NODE": compressed(cpus),
        "SLURM_TASKS_PER_NODE": compressed(tasks_per_node(cpus, cpus_per_task, ntasks)),
        "SLURM_SUBMIT_DIR": cwd,
        "SLURM_SUBMIT_HOST": submit_host,
        "SLURM_CLUSTER_NAME": str(info.get("cluster_name") or ""),
        "SLURM_JOB_PARTITION": str(job.get("partition") or ""),
        "SLURM_JOB_ACCOUNT": str(job.get("account") or ""),
        "SLURM_JOB_QOS": str(job.get("qos") or ""),
    }
    if ntasks is not None:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(ntasks)
    if job_options.get("cpus_per_task") is not None:
        env["SLURM_CPUS_PER_TASK"] = str(cpus_per_task)
    if job_options.get("ntasks_per_node") is not None:
        env["SLURM_NTASKS_PER_NODE"] = str(job_options["ntasks_per_node"])
    if job.get("mem_per_cpu"):
        env["SLURM_MEM_PER_CPU"] = str(job["mem_per_cpu"])
    elif job.get("mem_per_node"):
        env["SLURM_MEM_PER_NODE"] = str(job["mem_per_node"])
    return env


# ------------------------------------------------------------------------ holding


class _Holder:
    """The lease's renewals, on a connection of their own (a Client is one socket)."""

    def __init__(
        self, client: Client, job_id: int, prog: str, *, quiet: bool = False, verbose: bool = False
    ) -> None:
        self.client = client
        self.quiet = quiet
        self.verbose = verbose
        self.job_id = job_id
        self.prog = prog
        self.path = f"/api/jobs/{job_id}/allocation/"
        self.every = 1.0
        self.seen = 0  # the last notification (scontrol notify) printed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def say(self, text: str) -> None:
        _say(self.prog, text, quiet=self.quiet)

    def tell(self, text: str) -> None:
        """A line salloc prints and srun keeps for -v (srun's allocate.c: verbose, debug2)."""
        if self.prog == "salloc" or self.verbose:
            self.say(text)

    def renew(self, client: Client | None = None) -> dict:
        answer = (client or self.client).post(self.path + "renew/", {"seen": self.seen})
        if not isinstance(answer, dict) or not isinstance(answer.get("job"), dict):
            raise CliError("Unexpected answer from the controller to an allocation's renewal")
        self.every = float(answer.get("renew_every") or 1.0)
        for note in answer.get("notifications") or ():
            # salloc's and srun's _user_msg_handler: info("%s", msg), so -Q keeps it quiet.
            if isinstance(note, dict) and isinstance(note.get("id"), int) and note["id"] > self.seen:
                self.seen = note["id"]
                self.say(str(note.get("message", "")))
        return answer

    def wait_granted(self) -> dict:
        """Poll (renewing) until the job runs on its nodes; Slurm's words on the way.

        "queued and waiting" only once the job really waits: a scheduler pass has given it
        a reason, or it has pended a while.  Slurm's allocation request answers at once
        with the nodes when it can start the job, and then says nothing of a queue."""
        queued = configuring = configuring_said = False
        waited_since = time.monotonic()
        while True:
            info = self.renew()
            job = info["job"]
            state = job.get("state")
            if state in PENDING:
                evaluated = job.get("reason") not in (None, "", "None")
                if not queued and (evaluated or time.monotonic() - waited_since >= QUEUED_AFTER):
                    self.say(f"job {self.job_id} queued and waiting for resources")
                    queued = True
            elif state in GRANTED:
                if queued:
                    self.say(f"job {self.job_id} has been allocated resources")
                    queued = False
                if not configuring:
                    self.tell(f"Granted job allocation {self.job_id}")
                    configuring = True
                    if state == "CONFIGURING" or not info.get("launched"):
                        self.tell("Waiting for resource configuration")
                        configuring_said = True
                if state != "CONFIGURING" and info.get("launched"):
                    if configuring_said:
                        self.tell(f"Nodes {job.get('node_list')} are ready for job")
                    return info
            else:
                raise AllocationRevoked(self.prog, self.job_id)
            time.sleep(POLL)

    def start(self, alloc: Allocation) -> None:
        self._thread = threading.Thread(target=self._run, args=(alloc,), name="allocation-lease", daemon=True)
        self._thread.start()

    def _run(self, alloc: Allocation) -> None:
        client = Client(url=self.client.url, token=self.client.token)
        try:
            while not self._stop.wait(self.every):
                try:
                    state = self.renew(client)["job"].get("state")
                except ApiError as exc:
                    if exc.status in (401, 403, 404):
                        state = "GONE"
                    else:
                        continue
                except (ConnectError, CliError):
                    continue  # the controller restarting: the lease outlasts a few misses
                if state not in GRANTED:
                    alloc.revoked.set()
                    self.say(f"Job allocation {self.job_id} has been revoked.")
                    if alloc.on_revoke is not None:
                        alloc.on_revoke()
                    return
        finally:
            client.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def keep(self) -> None:
        """salloc --no-shell: the allocation stays when this process leaves."""
        self.client.post(self.path + "keep/")

    def release(self, exit_code: int = 0, exit_signal: int = 0) -> None:
        body = {"exit_code": exit_code & 0xFF, "signal": exit_signal & 0xFF}
        self.client.post(self.path + "release/", body)


def _submit(client: Client, body: dict) -> int:
    try:
        answer = client.post("/api/jobs/", body)
    except ApiError as exc:
        # salloc's words for a refused request: "Job submit/allocate failed: <why>".
        raise CliError(f"Job submit/allocate failed: {exc.message}") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("job_id"), int):
        raise CliError("Job submit/allocate failed: unexpected answer from the controller")
    return int(answer["job_id"])


def _granted(
    client: Client, job_options: dict, cwd: str, *, prog: str, verbose: bool
) -> tuple[_Holder, dict]:
    """Submit the request and wait until it runs on its nodes (Slurm's lines on the way).

    Ctrl-C (or SIGINT) while pending cancels the request and raises
    :class:`AllocationRevoked`, as does a request cancelled by someone else meanwhile."""
    job_id = _submit(client, request_body(job_options, environ=dict(os.environ), cwd=cwd))
    quiet = bool(job_options.get("quiet"))
    holder = _Holder(client, job_id, prog, quiet=quiet, verbose=verbose)
    holder.tell(f"Pending job allocation {job_id}")
    try:
        return holder, holder.wait_granted()
    except KeyboardInterrupt:
        _cancel_quietly(holder)
        raise AllocationRevoked(prog, job_id) from None
    except AllocationRevoked:
        raise
    except BaseException:
        _cancel_quietly(holder)
        raise


def allocate_and_keep(client: Client, job_options: dict, *, prog: str) -> int:
    """salloc --no-shell: the allocation granted (its nodes ready), then kept without this
    process, which salloc.c leaves with exit(0) and no further line; its job id."""
    holder, _info = _granted(client, job_options, os.getcwd(), prog=prog, verbose=False)
    try:
        holder.keep()
    except (ApiError, ConnectError) as exc:
        # Not kept: the lease runs out and the controller ends it, as it ends any
        # allocation whose holder is gone.
        raise CliError(f"Unable to keep job allocation {holder.job_id}: {exc.message}") from None
    return holder.job_id


@contextmanager
def allocate(client: Client, job_options: dict, *, prog: str, verbose: bool = False) -> Iterator[Allocation]:
    """Submit an allocation request, wait for it, hold it while the body runs, release it.

    Ctrl-C (or SIGINT) while pending cancels the request and raises
    :class:`AllocationRevoked`, as does a request cancelled by someone else meanwhile."""
    cwd = os.getcwd()
    holder, info = _granted(client, job_options, cwd, prog=prog, verbose=verbose)
    job_id = holder.job_id
    import socket  # noqa: PLC0415 - only a granted allocation needs the host name

    alloc = Allocation(job_id, allocation_env(info, job_options, cwd=cwd, submit_host=socket.gethostname()))
    holder.start(alloc)
    try:
        yield alloc
    except KeyboardInterrupt:
        alloc.exit_code, alloc.exit_signal = 0, int(signal.SIGINT)
        raise
    except BaseException:
        if not alloc.exit_code and not alloc.exit_signal:
            alloc.exit_code = 1
        raise
    finally:
        holder.stop()
        if not alloc.revoked.is_set():
            holder.tell(f"Relinquishing job allocation {job_id}")
            try:
                holder.release(alloc.exit_code, alloc.exit_signal)
            except (ApiError, ConnectError) as exc:
                # The lease runs out anyway: the controller ends it after InactiveLimit.
                _say(prog, f"error: Unable to release job allocation {job_id}: {exc.message}")


def _cancel_quietly(holder: _Holder) -> None:
    """A pending request given up (Ctrl-C): cancelled now, not when the lease runs out.
    The interrupted request may have left half an answer on the connection: a new one."""
    holder.client.close()
    with suppress(ApiError, ConnectError):
        holder.release(0, int(signal.SIGINT))
