"""``scontrol notify`` against the real controller's API, and the allocation holder
printing what it is told (salloc's and srun's _user_msg_handler: ``info("%s", msg)``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cluster.models import AllocationHolder, Event, Job


def allocation(job_id: int, user: str = "alice", state: str = "RUNNING") -> Job:
    now = datetime.now(tz=UTC)
    job = Job.objects.create(
        id=job_id, user=user, partition="debug", state=state, batch=False, submit_time=now,
        start_time=now, node_list="node01", batch_host="node01",
    )  # fmt: skip
    AllocationHolder.objects.create(job=job, lease_until=now + timedelta(minutes=5))
    return job


@pytest.mark.django_db(transaction=True)
def test_notify_joins_the_words_and_is_silent(demo, live_cli):
    allocation(12)
    assert live_cli("alice", "scontrol", "notify", "12", "save", "your", "work") == (0, "", "")
    assert Event.objects.get(job_id=12, reason="notify").detail == {"message": "save your work"}
    # atoi: 12_3 is job 12; "n" is notify, as in scontrol.
    assert live_cli("admin", "scontrol", "n", "12_3", "from", "admin")[0] == 0
    assert Event.objects.filter(job_id=12, reason="notify").count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("argv", "err"),
    [
        (["notify", "12"], "too few arguments for keyword:notify\n"),
        (["notify", "abc", "hi"], "Invalid job_id abc\n"),
        (["notify", "999", "hi"], "job notify failure: Invalid job id specified\n"),
        (["notify", "13", "hi"], "job notify failure: Job/step already completing or completed\n"),
        (["notify", "14", "hi"], "job notify failure: Requested operation is presently disabled\n"),
    ],
)
def test_refusals_in_scontrol_s_words(demo, live_cli, argv, err):
    allocation(13, state="COMPLETED")
    AllocationHolder.objects.filter(job_id=allocation(14).id).delete()  # salloc --no-shell's
    assert live_cli("alice", *["scontrol", *argv]) == (1, "", err)


@pytest.mark.django_db(transaction=True)
def test_another_user_s_job(demo, live_cli):
    allocation(15)
    assert live_cli("bob", "scontrol", "notify", "15", "hi") == (
        1,
        "",
        "job notify failure: Invalid user id\n",
    )
    assert not Event.objects.filter(job_id=15, reason="notify").exists()


class _Controller:
    def __init__(self, *notes: list) -> None:
        self.notes = list(notes)
        self.bodies: list = []

    def post(self, path: str, body: object = None) -> dict:
        self.bodies.append(body)
        notes = self.notes.pop(0) if self.notes else []
        return {"job": {"state": "RUNNING"}, "renew_every": 1, "notifications": notes}


@pytest.mark.parametrize("prog", ["salloc", "srun"])
def test_the_holder_prints_each_notification_once(prog, capsys):
    from cli import allocation as holder_module

    ctl = _Controller(
        [{"id": 4, "message": "hello"}, {"id": 6, "message": "again"}], [{"id": 6, "message": "again"}]
    )
    holder = holder_module._Holder(ctl, 5, prog)
    holder.renew()
    holder.renew()
    holder.renew()
    assert capsys.readouterr().err == f"{prog}: hello\n{prog}: again\n"
    assert ctl.bodies == [{"seen": 0}, {"seen": 6}, {"seen": 6}]


def test_quiet_keeps_notifications_quiet(capsys):
    from cli import allocation as holder_module

    holder = holder_module._Holder(_Controller([{"id": 1, "message": "hello"}]), 5, "salloc", quiet=True)
    holder.renew()
    assert capsys.readouterr().err == ""
