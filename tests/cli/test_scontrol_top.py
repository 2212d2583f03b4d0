"""``scontrol top`` against the real controller's API (cluster/services/job_top.py):
slurmctld's job_set_top rules and scontrol's words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cluster.models import Event, Job

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user_top(conf_dir, settings):
    """The demo configuration with SchedulerParameters=enable_user_top."""
    from cluster.services.configuration import config_load

    settings.CONF_DIR = conf_dir
    path = conf_dir / "slurm.conf"
    path.write_text(path.read_text() + "SchedulerParameters=enable_user_top\n")
    config_load(path=path)


def pending(job_id: int, user: str = "bob", priority: int = 100, **kw) -> Job:
    fields = {
        "user": user,
        "account": "",
        "partition": "debug",
        "state": "PENDING",
        "priority": priority,
        "submit_time": datetime(2026, 3, 1, tzinfo=UTC),
    }
    return Job.objects.create(id=job_id, **{**fields, **kw})


def priorities(*ids: int) -> dict[int, tuple[int, int]]:
    return {j.id: (j.priority, j.nice) for j in Job.objects.filter(id__in=ids)}


def test_an_administrator_moves_a_job_to_the_top_of_its_owner_s_jobs(demo, live_cli):
    pending(11, priority=300)
    pending(12, priority=200)
    pending(13, priority=100)
    pending(14, user="alice", priority=250)  # another user's: never moves
    status, out, err = live_cli("admin", "scontrol", "top", "13")
    assert (status, out, err) == (0, "", "")
    assert priorities(11, 12, 13, 14) == {11: (200, 100), 12: (100, 100), 13: (300, -200), 14: (250, 0)}
    event = Event.objects.filter(job_id=13, reason="top").get()
    assert event.user == "admin"
    assert event.detail == {
        "before": {"priority": 100, "nice": 0},
        "after": {"priority": 300, "nice": -200},
        "moved": [13],
    }
    assert Event.objects.get(job_id=11, reason="top").detail["moved"] == [13]


def test_jobid_prefix_and_several_jobs_in_order(demo, live_cli):
    pending(21, priority=30)
    pending(22, priority=20)
    pending(23, priority=10)
    assert live_cli("admin", "scontrol", "top", "JobId=23,22")[0] == 0
    assert priorities(21, 22, 23) == {23: (30, -20), 22: (20, 0), 21: (10, 20)}


def test_only_jobs_of_the_same_account_partition_and_qos_trade_places(demo, live_cli):
    pending(31, priority=300, qos="high")
    pending(32, priority=200, account="other")
    pending(33, priority=100)
    pending(34, priority=150)
    assert live_cli("admin", "scontrol", "top", "33")[0] == 0
    assert priorities(31, 32, 33, 34) == {31: (300, 0), 32: (200, 0), 33: (150, -50), 34: (100, 50)}


def test_users_may_not_without_enable_user_top(demo, live_cli):
    pending(41, priority=300)
    pending(42, priority=100)
    status, out, err = live_cli("bob", "scontrol", "top", "42")
    assert (status, out, err) == (1, "", "Access/permission denied for job 42\n")
    assert priorities(41, 42) == {41: (300, 0), 42: (100, 0)}
    assert not Event.objects.filter(reason__startswith="top").exists()


def test_with_enable_user_top_a_user_moves_their_own_jobs_only(user_top, users, live_cli):
    pending(51, priority=300)
    pending(52, priority=100)
    pending(53, user="alice", priority=100)
    assert live_cli("bob", "scontrol", "top", "52")[0] == 0
    assert priorities(51, 52) == {51: (100, 200), 52: (300, -200)}
    status, _, err = live_cli("bob", "scontrol", "top", "52,53")
    assert (status, err) == (1, "Access/permission denied for job 52,53\n")
    assert priorities(51, 52, 53) == {51: (100, 200), 52: (300, -200), 53: (100, 0)}


def test_jobs_not_pending_or_held_are_left_out(demo, live_cli):
    pending(61, state="RUNNING")
    pending(62, priority=0, hold="user", reason="JobHeldUser")
    pending(63, priority=50)
    pending(64, priority=80)
    status, _, err = live_cli("admin", "scontrol", "top", "61")
    assert (status, err) == (1, "Job is no longer pending execution for job 61\n")
    status, _, err = live_cli("admin", "scontrol", "top", "62")
    assert (status, err) == (1, "Job is in held state, pending scheduler release for job 62\n")
    # One that can move: the others are left out and the answer is a success.
    assert live_cli("admin", "scontrol", "top", "61,62,63")[0] == 0
    assert priorities(63, 64) == {63: (80, -30), 64: (50, 30)}


@pytest.mark.parametrize(
    ("argv", "err"),
    [
        (["top"], "too few arguments for keyword:top\n"),
        (["top", "1", "2"], "too many arguments for keyword:top\n"),
        (["top", "abc"], "Invalid job id specified for job abc\n"),
        (["top", "999"], "Invalid job id specified for job 999\n"),
        (["top", "12_x"], "Invalid job id specified for job 12_x\n"),
        (["to", "12"], "invalid keyword: to\n"),
    ],
)
def test_refusals_in_scontrol_s_words(demo, live_cli, argv, err):
    status, out, got = live_cli("admin", "scontrol", *argv)
    assert (status, out, got) == (1, "", err)


def test_quiet_keeps_the_error_quiet(demo, live_cli):
    assert live_cli("admin", "scontrol", "-Q", "top", "999") == (1, "", "")
    assert live_cli("admin", "scontrol", "-Q", "top") == (1, "", "")
