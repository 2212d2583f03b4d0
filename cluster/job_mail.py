"""sbatch ``--mail-type``/``--mail-user``: the job mail slurmctld sends, through Django's
email backend (the console's by default, settings.EMAIL_BACKEND), or through
slurm.conf's ``MailProg`` when it names one, run as slurmctld runs it:
``MailProg -s <subject> <address>`` with the job's SLURM_* variables, no shell.

The state services call :func:`began`, :func:`ended`, :func:`reached_time_limit` and
:func:`invalid_dependency` inside their transaction; a mail is only queued after the
commit (a rolled-back pass sends nothing) and is sent by one background thread, so
neither a slow mail server nor a failing one can hold a pass, a completion or a job:
its failure is logged, never raised. A leaf like cluster/publish.py: it imports no
service.

An array's tasks mail one by one with ARRAY_TASKS (``Slurm Array Task Job_id=7_3 (10)``);
without it, as slurmctld mails for the array's master record, BEGIN is sent when the
first task starts and END/FAIL once, when the last task ends (``Slurm Array Summary
Job_id=7_* (7) Name=x Ended, COMPLETED, ExitCode [0-0]``).
"""

from __future__ import annotations

import logging
import queue
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction

from cluster.core.states import FINISHED_JOB_STATES, JobState
from cluster.models import ClusterConfig, Job
from slurmwords import mail

log = logging.getLogger(__name__)

MAIL_PROG_TIMEOUT = 120  # seconds; slurmctld's MAIL_PROG_TIMEOUT


@dataclass(frozen=True)
class Outgoing:
    address: str
    subject: str
    env: dict[str, str]
    mail_prog: str


class _Sender:
    """One background thread that hands the queued mails over, in order."""

    def __init__(self) -> None:
        self.queue: queue.Queue[Outgoing] = queue.Queue()
        self.idle = threading.Condition()
        self.pending = 0
        self.worker: threading.Thread | None = None

    def put(self, out: Outgoing) -> None:
        with self.idle:
            self.pending += 1
            if self.worker is None or not self.worker.is_alive():
                self.worker = threading.Thread(target=self.run, name="fsched-job-mail", daemon=True)
                self.worker.start()
        self.queue.put(out)

    def run(self) -> None:
        while True:
            out = self.queue.get()
            try:
                _deliver(out)
            except Exception:  # a mail never stops the next one, nor anything else
                log.exception("job mail to %s (%s) failed", out.address, out.subject)
            with self.idle:
                self.pending -= 1
                self.idle.notify_all()

    def flush(self, timeout: float) -> bool:
        with self.idle:
            return self.idle.wait_for(lambda: self.pending == 0, timeout)


_sender = _Sender()


def _options() -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in ClusterConfig.current().options.items()}


def _queue_mail(job: Job, kind: str, subject: str, state: str) -> None:
    out = _outgoing(job, kind, subject, state)
    transaction.on_commit(lambda: _sender.put(out))


def _outgoing(job: Job, kind: str, subject: str, state: str) -> Outgoing:
    options = _options()
    address = mail.mail_address(job.mail_user, job.user, options.get("maildomain", ""))
    env = {
        "SLURM_JOB_ID": str(job.id),
        "SLURM_JOB_NAME": job.name,
        "SLURM_JOB_USER": job.user,
        "SLURM_JOB_STATE": state,
        "SLURM_JOB_MAIL_TYPE": mail.WORDS.get(kind, kind),
    }
    if job.array_job_id is not None and job.array_task_id is not None:
        env["SLURM_ARRAY_JOB_ID"], env["SLURM_ARRAY_TASK_ID"] = str(job.array_job_id), str(job.array_task_id)
    return Outgoing(address, subject, env, options.get("mailprog", ""))


def _deliver(out: Outgoing) -> None:
    if out.mail_prog:
        # The administrator's slurm.conf program, its words as arguments: no shell.
        env = {"PATH": "/usr/bin:/bin", **out.env}
        done = subprocess.run(
            [out.mail_prog, "-s", out.subject, out.address],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            timeout=MAIL_PROG_TIMEOUT,
            check=False,
        )
        if done.returncode:
            output = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
            log.error("MailProg returned error, it's output was '%s'", output)
        return
    send_mail(out.subject, "", settings.DEFAULT_FROM_EMAIL, [out.address], fail_silently=False)


def flush(timeout: float = 10.0) -> bool:
    """Wait until every queued mail was handed over (tests, shutdown); False on timeout."""
    return _sender.flush(timeout)


def _wants(job: Job, kind: str) -> bool:
    return bool(job.mail_type) and kind in mail.mail_types(job.mail_type)


def _mail_job(job: Job) -> mail.MailJob:
    return mail.MailJob(job.id, job.name, job.array_job_id, job.array_task_id)


def _per_task(job: Job) -> bool:
    return job.array_task_id is None or mail.ARRAY_TASKS in mail.mail_types(job.mail_type)


def began(jobs: Iterable[Job], *, now: datetime) -> None:
    """Jobs a pass started together (an array's tasks often): BEGIN for each, or once for
    an array without ARRAY_TASKS, when none of its tasks had started before."""
    arrays: dict[int, list[Job]] = {}
    for job in jobs:
        if not _wants(job, mail.BEGIN):
            continue
        if _per_task(job):
            queued = (now - job.submit_time).total_seconds() if job.submit_time else None
            _queue_mail(
                job, mail.BEGIN, mail.subject(_mail_job(job), mail.BEGIN, seconds=queued), JobState.RUNNING
            )
        else:
            arrays.setdefault(int(job.array_job_id or 0), []).append(job)
    for array_id, tasks in arrays.items():
        started = Job.objects.filter(array_job_id=array_id, start_time__isnull=False)
        if not started.exclude(pk__in=[t.id for t in tasks]).exists():
            _queue_mail(tasks[0], mail.BEGIN, _summary(tasks[0], mail.BEGIN), JobState.RUNNING)


def _run_secs(job: Job, end: datetime) -> float | None:
    if job.start_time is None:
        return None
    return max(0.0, (end - job.start_time).total_seconds() - (job.paused_seconds or 0))


def ended(job: Job, state: str, *, now: datetime, requeued: bool = False) -> None:
    """The job ended (or goes COMPLETING) with ``state``, or was requeued after it ran."""
    if not job.mail_type:
        return
    kind = mail.end_kind(mail.mail_types(job.mail_type), state, requeued=requeued)
    if kind is None:
        return
    if requeued or _per_task(job):
        exit_code = None if job.exit_signal else job.exit_code
        seconds = _run_secs(job, job.end_time or now)
        subject = mail.subject(_mail_job(job), kind, seconds=seconds, state=state, exit_code=exit_code)
        _queue_mail(job, kind, subject, state)
    else:
        # Decided after the commit, from the rows: tasks ending in one transaction (one
        # completed_batch) each see the others ended, and only the last to end mails.
        job_id, array_id = job.id, int(job.array_job_id or 0)
        transaction.on_commit(lambda: _array_summary(job_id, array_id, kind))


_ENDED = frozenset({*(s.value for s in FINISHED_JOB_STATES), JobState.COMPLETING.value})


def _array_summary(job_id: int, array_id: int, kind: str) -> None:
    try:
        fields = ("id", "state", "final_state", "exit_code", "end_time")
        tasks = list(Job.objects.filter(array_job_id=array_id).values_list(*fields))
        if not tasks or any(state not in _ENDED for _, state, _, _, _ in tasks):
            return  # the summary goes with the array's last task
        last = max(tasks, key=lambda t: (t[4] is not None, t[4] or 0, t[0]))
        if last[0] != job_id:
            return
        ends = [
            (final if state == JobState.COMPLETING else state, code) for _, state, final, code, _ in tasks
        ]
        job = Job.objects.get(pk=job_id)
        _sender.put(_outgoing(job, kind, _summary(job, kind, ends), ends[-1][0]))
    except Exception:  # after the commit: nothing must escape into the caller
        log.exception("array %s: the summary mail could not be prepared", array_id)


def _summary(job: Job, kind: str, ends: list[tuple[str, int]] | None = None) -> str:
    """slurmctld's ``Slurm Array Summary`` subject; with the tasks' ends (state, exit
    code), their exit code range."""
    array = job.array_job_id
    head = f"Slurm Array Summary Job_id={array}_* ({array}) Name={job.name} {mail.WORDS[kind]}"
    if kind not in (mail.END, mail.FAIL) or not ends:
        return head
    codes = [code for _, code in ends]
    low, high = min(codes), max(codes)
    states = {state for state, _ in ends}
    word = "Mixed" if (low == 0 and high > 0) or len(states) > 1 else states.pop()
    return f"{head}, {word}, ExitCode [{low}-{high}]"


def reached_time_limit(job: Job, *, now: datetime) -> None:
    if _wants(job, mail.TIME_LIMIT) and _per_task(job):
        subject = mail.subject(_mail_job(job), mail.TIME_LIMIT, seconds=_run_secs(job, now))
        _queue_mail(job, mail.TIME_LIMIT, subject, str(job.state))


def time_limit_warnings(job: Job, *, now: datetime) -> bool:
    """TIME_LIMIT_90/80/50 crossed by a running job: mailed once each, the type then
    leaving the job's MailType as slurmctld clears it. True when the row changed (unsaved)."""
    types = mail.mail_types(job.mail_type)
    run = _run_secs(job, now)
    if run is None or not job.time_limit:
        return False
    due = mail.due_time_mails(types, run, job.time_limit * 60)
    for kind in due:
        _queue_mail(job, kind, mail.subject(_mail_job(job), kind, seconds=run), str(job.state))
    if due:
        job.mail_type = ",".join(w for w in mail.ORDER if w in types and w not in due)
    return bool(due)


def time_limit_pass(*, now: datetime) -> int:
    """The health cycle's look at the running jobs that asked for TIME_LIMIT_90/80/50
    (few: the query names them); the number of jobs mailed."""
    mailed = 0
    with transaction.atomic():
        asking = Job.objects.select_for_update().filter(
            state=JobState.RUNNING, mail_type__contains="TIME_LIMIT_"
        )
        for job in asking:
            if time_limit_warnings(job, now=now):
                job.save(update_fields=["mail_type"])
                mailed += 1
    return mailed


def invalid_dependency(job: Job) -> None:
    if _wants(job, mail.INVALID_DEPEND):
        subject = mail.subject(_mail_job(job), mail.INVALID_DEPEND)
        _queue_mail(job, mail.INVALID_DEPEND, subject, str(job.state))


__all__ = [
    "began",
    "ended",
    "flush",
    "invalid_dependency",
    "reached_time_limit",
    "time_limit_pass",
    "time_limit_warnings",
]
