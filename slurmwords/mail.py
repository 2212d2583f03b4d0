"""sbatch's ``--mail-type`` and the subject lines of slurmctld's job mail (pure: no I/O,
no Django, no clock).

The types are sbatch(1)'s: BEGIN, END, FAIL, REQUEUE, INVALID_DEPEND, TIME_LIMIT,
TIME_LIMIT_90, TIME_LIMIT_80, TIME_LIMIT_50, ARRAY_TASKS, ALL (BEGIN, END, FAIL,
INVALID_DEPEND, REQUEUE and STAGE_OUT) and NONE. STAGE_OUT belongs to burst buffers,
which fsched has not: named alone it is refused, inside ALL it sends nothing.

The subjects are slurmctld's, the whole message in the subject and an empty body:
``Slurm Job_id=12 Name=x Began, Queued time 00:00:01``,
``Slurm Job_id=12 Name=x Ended, Run time 00:00:05, COMPLETED, ExitCode 0``,
``Slurm Array Task Job_id=7_3 (10) Name=x Failed, Run time 00:00:05, FAILED, ExitCode 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmwords.durations import format_duration_long

BEGIN = "BEGIN"
END = "END"
FAIL = "FAIL"
REQUEUE = "REQUEUE"
INVALID_DEPEND = "INVALID_DEPEND"
TIME_LIMIT = "TIME_LIMIT"
TIME_LIMIT_90 = "TIME_LIMIT_90"
TIME_LIMIT_80 = "TIME_LIMIT_80"
TIME_LIMIT_50 = "TIME_LIMIT_50"
ARRAY_TASKS = "ARRAY_TASKS"
STAGE_OUT = "STAGE_OUT"

# In the order scontrol show job prints them (MailType=, Slurm's print_mail_type).
ORDER = (ARRAY_TASKS, INVALID_DEPEND, BEGIN, END, FAIL, REQUEUE, TIME_LIMIT, TIME_LIMIT_90,
         TIME_LIMIT_80, TIME_LIMIT_50)  # fmt: skip
ALL = (BEGIN, END, FAIL, INVALID_DEPEND, REQUEUE)  # and STAGE_OUT, which fsched has not
# The percentages of the time limit that TIME_LIMIT_* mail at, largest first.
TIME_THRESHOLDS = ((TIME_LIMIT_90, 90), (TIME_LIMIT_80, 80), (TIME_LIMIT_50, 50))

# The words of slurmctld's subject for each kind of mail.
WORDS = {
    INVALID_DEPEND: "Invalid dependency",
    BEGIN: "Began",
    END: "Ended",
    FAIL: "Failed",
    REQUEUE: "Requeued",
    TIME_LIMIT: "Reached time limit",
    TIME_LIMIT_90: "Reached 90% of time limit",
    TIME_LIMIT_80: "Reached 80% of time limit",
    TIME_LIMIT_50: "Reached 50% of time limit",
}


def parse_mail_type(text: str) -> str:
    """``--mail-type``'s comma list as the stored, canonical one ("" for NONE); raises
    ValueError with sbatch's message for a word it does not know."""
    words: set[str] = set()
    for raw in text.split(","):
        word = raw.strip().upper()
        if word == "ALL":
            words.update(ALL)
        elif word == "NONE":
            words.clear()
        elif word in ORDER:
            words.add(word)
        elif word == STAGE_OUT:
            raise ValueError(f"--mail-type={text} invalid (STAGE_OUT: fsched has no burst buffers)")
        else:
            raise ValueError(f"--mail-type={text} invalid")
    return ",".join(w for w in ORDER if w in words)


def mail_types(stored: str) -> frozenset[str]:
    return frozenset(w for w in stored.split(",") if w)


def mail_address(mail_user: str, user: str, domain: str = "") -> str:
    """Who gets the mail: ``--mail-user``, else the job's user, qualified with
    slurm.conf's MailDomain when it has no ``@`` (slurm.conf(5), MailDomain)."""
    address = mail_user or user
    if domain and "@" not in address:
        address = f"{address}@{domain.lstrip('@')}"
    return address


def end_kind(types: frozenset[str], state: str, *, requeued: bool = False) -> str | None:
    """Which mail a job's end sends, as slurmctld's job_completion_logger chooses: a
    requeue sends REQUEUE; COMPLETED or CANCELLED sends END; any other end FAIL, or END
    when FAIL was not asked."""
    if requeued:
        return REQUEUE if REQUEUE in types else None
    if state in ("COMPLETED", "CANCELLED"):
        return END if END in types else None
    if FAIL in types:
        return FAIL
    return END if END in types else None


def due_time_mails(types: frozenset[str], run_secs: float, limit_secs: float) -> list[str]:
    """The TIME_LIMIT_90/80/50 mails a running job is due: each threshold crossed that is
    still asked for. As slurmctld, the caller removes a type from the job's MailType once
    its mail is sent, so that each is sent once."""
    if limit_secs <= 0:
        return []
    return [
        kind for kind, percent in TIME_THRESHOLDS if kind in types and run_secs * 100 >= limit_secs * percent
    ]


@dataclass(frozen=True)
class MailJob:
    """What a subject line names."""

    job_id: int
    name: str
    array_job_id: int | None = None
    array_task_id: int | None = None


def subject(
    job: MailJob, kind: str, *, seconds: float | None = None, state: str = "", exit_code: int | None = None
) -> str:
    """slurmctld's subject (mail_job_info): ``seconds`` is the queued time of BEGIN, the
    run time of END, FAIL, REQUEUE and TIME_LIMIT*; ``state`` and ``exit_code`` end
    END's and FAIL's (no exit code for a job killed by a signal)."""
    if job.array_task_id is not None and job.array_job_id is not None:
        head = f"Slurm Array Task Job_id={job.array_job_id}_{job.array_task_id} ({job.job_id})"
    else:
        head = f"Slurm Job_id={job.job_id}"
    text = f"{head} Name={job.name} {WORDS[kind]}"
    if seconds is not None and kind != INVALID_DEPEND:
        label = "Queued time" if kind == BEGIN else "Run time"
        text += f", {label} {format_duration_long(max(0, int(seconds)))}"
    if kind in (END, FAIL) and state:
        text += f", {state}" + (f", ExitCode {exit_code}" if exit_code is not None else "")
    return text
