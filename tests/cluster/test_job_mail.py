"""Job mail (sbatch --mail-type/--mail-user, #16 point 6) through the controller's real
paths: the pass that starts a job, the agent's completion, a requeue, the health cycle's
time-limit look. Mail goes through Django's email backend (pytest-django's in-memory
one here), or slurm.conf's MailProg; it is queued after the commit and sent by a
background thread, and a failing one never stops a job."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core import mail as django_mail
from django.db import connection
from django.utils import timezone

from cluster import job_mail
from cluster.models import Job
from cluster.services import agents, prolog_epilog
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from tests.cluster.test_prolog_epilog_service import completion, register, set_option

pytestmark = pytest.mark.django_db


def commit() -> None:
    """What the services leave for after the commit (the mail is queued then) runs: the
    test's transaction itself is never committed."""
    waiting = list(connection.run_on_commit)
    connection.run_on_commit.clear()
    for _savepoints, callback, _robust in waiting:
        callback()


def submit(user, **spec) -> Job:
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch", "name": "x", **spec}
    return Job.objects.get(pk=job_submit(user=user, spec=spec).job_ids[0])


def start(job: Job) -> Job:
    schedule_pass()
    job.refresh_from_db()
    assert job.state == "RUNNING"
    agents.job_started(job_id=job.id, node=job.batch_host, run=job.restart_count)
    return job


def sent() -> list[tuple[str, list[str]]]:
    commit()
    assert job_mail.flush()
    return [(m.subject, m.to) for m in django_mail.outbox]


def test_begin_and_end_mail_with_slurms_subjects(demo, users, mailoutbox):
    register(timezone.now() - timedelta(minutes=1))
    job = start(submit(users["alice"], mail_type="BEGIN,END", mail_user="ann@example.org"))
    [(subject, to)] = sent()
    assert re.fullmatch(rf"Slurm Job_id={job.id} Name=x Began, Queued time 00:00:0\d", subject), subject
    assert to == ["ann@example.org"]
    agents.job_completed(completion=completion(job, exit_code=0))
    subject, _ = sent()[-1]
    assert re.fullmatch(
        rf"Slurm Job_id={job.id} Name=x Ended, Run time 00:00:0\d, COMPLETED, ExitCode 0", subject
    )


def test_fail_mail_and_the_default_address_with_mail_domain(demo, users, mailoutbox):
    set_option("MailDomain", "example.org")
    register(timezone.now() - timedelta(minutes=1))
    job = start(submit(users["alice"], mail_type="FAIL"))
    assert sent() == []  # no BEGIN asked
    agents.job_completed(completion=completion(job, exit_code=3))
    [(subject, to)] = sent()
    assert re.fullmatch(
        rf"Slurm Job_id={job.id} Name=x Failed, Run time 00:00:0\d, FAILED, ExitCode 3", subject
    )
    assert to == ["alice@example.org"]


def test_with_an_epilog_the_end_is_mailed_once(demo, users, mailoutbox):
    set_option("Epilog", "/etc/slurm/epilog")
    register(timezone.now() - timedelta(minutes=1))
    job = start(submit(users["alice"], mail_type="END"))
    agents.job_completed(completion=completion(job))
    prolog_epilog.epilog_done(job_id=job.id, node=job.batch_host, run=0)
    [(subject, _)] = sent()  # when it went COMPLETING, not again at the Epilog's end
    assert subject.endswith("COMPLETED, ExitCode 0")


def test_a_requeue_after_a_failed_prolog_is_mailed(demo, users, mailoutbox):
    register(timezone.now() - timedelta(minutes=1))
    job = start(submit(users["alice"], mail_type="REQUEUE"))
    prolog_epilog.prolog_failed(job_id=job.id, node=job.batch_host, run=0, error="exited with status 1")
    [(subject, _)] = sent()
    assert re.fullmatch(rf"Slurm Job_id={job.id} Name=x Requeued, Run time 00:00:0\d", subject)


def test_time_limit_percentages_are_mailed_once_each(demo, users, mailoutbox):
    register(timezone.now() - timedelta(minutes=1))
    job = start(submit(users["alice"], time="2", mail_type="TIME_LIMIT_50,TIME_LIMIT_90"))
    assert job_mail.time_limit_pass(now=job.start_time + timedelta(seconds=30)) == 0
    assert job_mail.time_limit_pass(now=job.start_time + timedelta(seconds=61)) == 1
    assert sent() == [
        (f"Slurm Job_id={job.id} Name=x Reached 50% of time limit, Run time 00:01:01", ["alice"])
    ]
    assert job_mail.time_limit_pass(now=job.start_time + timedelta(seconds=62)) == 0  # once
    assert job_mail.time_limit_pass(now=job.start_time + timedelta(seconds=110)) == 1
    assert sent()[-1][0].endswith("Reached 90% of time limit, Run time 00:01:50")
    job.refresh_from_db()
    assert job.mail_type == ""  # slurmctld clears each type once mailed


def test_mail_prog_from_slurm_conf_is_run_without_a_shell(demo, users, tmp_path: Path):
    log = tmp_path / "mail.log"
    prog = tmp_path / "mail prog"  # a space: no shell ever splits it
    prog.write_text(f'#!/bin/sh\nprintf "%s|" "$@" "$SLURM_JOB_ID" "$SLURM_JOB_MAIL_TYPE" >> "{log}"\n')
    prog.chmod(0o755)
    set_option("MailProg", str(prog))
    register(timezone.now() - timedelta(minutes=1))
    job = start(submit(users["alice"], mail_type="BEGIN", mail_user="bob"))
    commit()
    assert job_mail.flush()
    words = log.read_text().split("|")
    assert words[0] == "-s" and words[1].startswith(f"Slurm Job_id={job.id} Name=x Began, Queued time")
    assert words[2:5] == ["bob", str(job.id), "Began"]


def test_a_failing_mail_server_never_stops_the_job(demo, users, settings, caplog):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens
    register(timezone.now() - timedelta(minutes=1))
    job = start(submit(users["alice"], mail_type="ALL"))
    agents.job_completed(completion=completion(job))
    commit()
    assert job_mail.flush(timeout=30)
    job.refresh_from_db()
    assert job.state == "COMPLETED"
    assert "job mail to alice" in caplog.text


def test_submission_checks_and_stores_the_mail_options(demo, users):
    job = submit(users["alice"], mail_type="all,time_limit_80", hold=True)
    assert (job.mail_type, job.mail_user) == ("INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,TIME_LIMIT_80", "")
    with pytest.raises(ServiceError, match=r"^--mail-type=SOMETIMES invalid$"):
        submit(users["alice"], mail_type="SOMETIMES")
    with pytest.raises(ServiceError, match="Invalid --mail-user specification"):
        submit(users["alice"], mail_type="END", mail_user="a b@example.org")


def test_the_time_limit_is_mailed_when_the_pass_ends_the_job(demo, users, mailoutbox):
    register(timezone.now() - timedelta(minutes=1))
    job = start(submit(users["alice"], time="1", mail_type="TIME_LIMIT"))
    schedule_pass(now=job.start_time + timedelta(seconds=65))
    [(subject, _)] = sent()
    assert re.fullmatch(rf"Slurm Job_id={job.id} Name=x Reached time limit, Run time 00:01:0\d", subject), (
        subject
    )


def test_an_array_mails_once_without_array_tasks_and_per_task_with_it(demo, users, mailoutbox):
    register(timezone.now() - timedelta(minutes=1))
    first = submit(users["alice"], array="0-1", mail_type="BEGIN,END")
    schedule_pass()
    tasks = list(Job.objects.filter(array_job_id=first.array_job_id).order_by("array_task_id"))
    assert [s for s, _ in sent()] == [
        f"Slurm Array Summary Job_id={first.array_job_id}_* ({first.array_job_id}) Name=x Began"
    ]
    for task, code in zip(tasks, (0, 2), strict=True):
        agents.job_started(job_id=task.id, node=Job.objects.get(pk=task.id).batch_host, run=0)
        agents.job_completed(completion=completion(Job.objects.get(pk=task.id), exit_code=code))
    assert sent()[1:] == [
        (f"Slurm Array Summary Job_id={first.array_job_id}_* ({first.array_job_id}) Name=x Ended, Mixed, "
         "ExitCode [0-2]", ["alice"])
    ]  # fmt: skip
    django_mail.outbox.clear()
    each = submit(users["alice"], array="0-1", mail_type="BEGIN,ARRAY_TASKS")
    schedule_pass()
    subjects = sorted(s for s, _ in sent())
    assert len(subjects) == 2
    assert subjects[0].startswith(f"Slurm Array Task Job_id={each.array_job_id}_0 (")


def test_an_invalid_dependency_is_mailed_once(demo, users, mailoutbox):
    register(timezone.now() - timedelta(minutes=1))
    parent = start(submit(users["alice"]))
    child = submit(users["alice"], dependency=f"afterok:{parent.id}", mail_type="INVALID_DEPEND")
    agents.job_completed(completion=completion(parent, exit_code=1))
    schedule_pass()
    schedule_pass()
    assert sent() == [(f"Slurm Job_id={child.id} Name=x Invalid dependency", ["alice"])]
