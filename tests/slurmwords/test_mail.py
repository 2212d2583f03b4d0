"""sbatch --mail-type's words and slurmctld's subject lines (slurmwords/mail.py, #16 point 6)."""

from __future__ import annotations

import pytest

from slurmwords import mail


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("BEGIN", "BEGIN"),
        ("end,begin", "BEGIN,END"),
        ("ALL", "INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE"),
        ("ALL,ARRAY_TASKS", "ARRAY_TASKS,INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE"),
        ("NONE", ""),
        (
            "TIME_LIMIT_50,TIME_LIMIT,TIME_LIMIT_90,TIME_LIMIT_80",
            "TIME_LIMIT,TIME_LIMIT_90,TIME_LIMIT_80,TIME_LIMIT_50",
        ),
    ],
)
def test_mail_types_are_stored_in_slurms_order(text, stored):
    assert mail.parse_mail_type(text) == stored


@pytest.mark.parametrize("text", ["SOMETIMES", "BEGIN,", "begin;end", ""])
def test_an_unknown_mail_type_is_sbatchs_error(text):
    with pytest.raises(ValueError, match=rf"^--mail-type={text} invalid$"):
        mail.parse_mail_type(text)


def test_stage_out_is_refused_with_why():
    with pytest.raises(ValueError, match="STAGE_OUT: fsched has no burst buffers"):
        mail.parse_mail_type("STAGE_OUT")


JOB = mail.MailJob(job_id=12, name="x")


def test_subjects_are_slurmctlds():
    assert mail.subject(JOB, mail.BEGIN, seconds=1) == "Slurm Job_id=12 Name=x Began, Queued time 00:00:01"
    assert (
        mail.subject(JOB, mail.END, seconds=3725, state="COMPLETED", exit_code=0)
        == "Slurm Job_id=12 Name=x Ended, Run time 01:02:05, COMPLETED, ExitCode 0"
    )
    assert (
        mail.subject(JOB, mail.FAIL, seconds=90061, state="FAILED", exit_code=3)
        == "Slurm Job_id=12 Name=x Failed, Run time 1-01:01:01, FAILED, ExitCode 3"
    )
    # Killed by a signal: the state alone.
    assert mail.subject(JOB, mail.FAIL, seconds=5, state="CANCELLED") == (
        "Slurm Job_id=12 Name=x Failed, Run time 00:00:05, CANCELLED"
    )
    assert mail.subject(JOB, mail.REQUEUE, seconds=5) == "Slurm Job_id=12 Name=x Requeued, Run time 00:00:05"
    assert mail.subject(JOB, mail.TIME_LIMIT_80, seconds=48) == (
        "Slurm Job_id=12 Name=x Reached 80% of time limit, Run time 00:00:48"
    )
    assert mail.subject(JOB, mail.INVALID_DEPEND) == "Slurm Job_id=12 Name=x Invalid dependency"
    task = mail.MailJob(job_id=10, name="a", array_job_id=7, array_task_id=3)
    assert (
        mail.subject(task, mail.BEGIN, seconds=0)
        == "Slurm Array Task Job_id=7_3 (10) Name=a Began, Queued time 00:00:00"
    )


def test_which_mail_an_end_sends():
    both = frozenset({mail.END, mail.FAIL})
    assert mail.end_kind(both, "COMPLETED") == mail.END
    assert mail.end_kind(both, "CANCELLED") == mail.END
    assert mail.end_kind(both, "TIMEOUT") == mail.FAIL
    assert mail.end_kind(frozenset({mail.END}), "FAILED") == mail.END
    assert mail.end_kind(frozenset({mail.FAIL}), "COMPLETED") is None
    assert mail.end_kind(frozenset({mail.END}), "COMPLETED", requeued=True) is None
    assert mail.end_kind(frozenset({mail.REQUEUE}), "REQUEUED", requeued=True) == mail.REQUEUE


def test_time_limit_mails_fall_due_at_their_percentage():
    types = frozenset({mail.TIME_LIMIT_50, mail.TIME_LIMIT_90})
    assert mail.due_time_mails(types, 59, 120) == []
    assert mail.due_time_mails(types, 60, 120) == [mail.TIME_LIMIT_50]
    assert mail.due_time_mails(types, 110, 120) == [mail.TIME_LIMIT_90, mail.TIME_LIMIT_50]
    assert mail.due_time_mails(frozenset({mail.TIME_LIMIT_90}), 110, 120) == [mail.TIME_LIMIT_90]


def test_the_address_is_the_user_qualified_by_mail_domain():
    assert mail.mail_address("", "alice") == "alice"
    assert mail.mail_address("", "alice", "example.org") == "alice@example.org"
    assert mail.mail_address("bob@lab.org", "alice", "example.org") == "bob@lab.org"
