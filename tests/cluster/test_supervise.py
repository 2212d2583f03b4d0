"""make run's supervision (config/supervise.py): which exits restart, the backoff, the log."""

from __future__ import annotations

import signal
import subprocess

import pytest

from config.supervise import Backoff, Supervised, crashed, describe


def test_backoff_doubles_to_the_cap_and_resets_after_a_stable_run():
    backoff = Backoff(first=1, cap=30, stable=60)
    assert [backoff.delay(ran_for=2) for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert backoff.delay(ran_for=61) == 1  # it had run a while: start again from the first delay
    assert backoff.delay(ran_for=0.5) == 2


@pytest.mark.parametrize(
    ("returncode", "restart"),
    [
        (1, True),
        (-signal.SIGKILL, True),
        (-signal.SIGSEGV, True),
        (0, False),
        (2, False),
        (-signal.SIGTERM, False),
        (-signal.SIGINT, False),
    ],
)
def test_what_counts_as_a_crash(returncode, restart):
    assert crashed(returncode) is restart


def test_describe():
    assert describe(-9) == "was killed by signal 9 (SIGKILL)"
    assert describe(3) == "exited with status 3"


def _wait(proc: subprocess.Popen) -> None:
    proc.wait(10)


def test_a_killed_process_is_restarted_after_the_delay_and_logged():
    said: list[str] = []
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        started.append(subprocess.Popen(["sleep", "30"]))
        return started[-1]

    try:
        sup = Supervised("agent", start, now=100.0, say=said.append, backoff=Backoff(first=1, cap=4))
        assert sup.poll(100.5) is None and len(started) == 1  # running: nothing to do
        first = started[0]
        first.kill()
        _wait(first)
        assert sup.poll(105.0) is None
        assert said == [
            f"agent (pid {first.pid}) was killed by signal 9 (SIGKILL) after 5 s; restarting it in 1 s"
        ]
        assert sup.poll(105.5) is None and len(started) == 1  # not before the delay
        assert sup.poll(106.0) is None and len(started) == 2
        assert said[-1] == f"agent restarted (pid {started[1].pid}, restart 1)"
        assert started[1].poll() is None

        started[1].kill()
        _wait(started[1])
        sup.poll(106.5)
        assert said[-1].endswith("restarting it in 2 s")  # the second crash in a row waits longer
    finally:
        for proc in started:
            proc.kill()
            proc.wait()


def test_a_clean_exit_or_a_refusal_stops_everything_instead():
    said: list[str] = []
    for status in (0, 2):
        proc = subprocess.Popen(["sh", "-c", f"exit {status}"])
        _wait(proc)
        sup = Supervised("agent", lambda p=proc: p, now=0.0, say=said.append)
        assert sup.poll(1.0) == f"agent (pid {proc.pid}) exited with status {status}; stopping"
        assert sup.restarts == 0
    assert said == []


def test_the_first_run_may_be_started_by_the_caller():
    proc = subprocess.Popen(["sh", "-c", "exit 1"])
    _wait(proc)
    starts: list[int] = []
    sup = Supervised(
        "controller", lambda: starts.append(1) or proc, now=0.0, say=lambda _m: None, running=proc
    )
    assert starts == []
    sup.poll(0.1)
    assert sup.restart_at == pytest.approx(1.1)
