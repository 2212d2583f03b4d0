"""sbatch --signal for a job's steps (steps/core/warning.py): which form reaches them, when."""

from __future__ import annotations

from steps.core.warning import step_warning


def test_the_signal_is_sent_its_time_before_the_limit_moved_by_suspensions() -> None:
    assert step_warning("USR1@60", time_limit_minutes=5, start=1000.0) == (10, 1000.0 + 300 - 60)
    assert step_warning("R:USR1@60", time_limit_minutes=5, start=1000.0, paused_seconds=30) == (10, 1270.0)
    assert step_warning("12", time_limit_minutes=2, start=0.0) == (12, 120.0 - 60)  # Slurm's default 60 s


def test_the_batch_shell_s_signal_no_limit_or_none_is_not_the_steps_concern() -> None:
    assert step_warning("B:USR1@60", time_limit_minutes=5, start=0.0) is None
    assert step_warning("USR1@60", time_limit_minutes=None, start=0.0) is None
    assert step_warning("", time_limit_minutes=5, start=0.0) is None
    assert step_warning("NOSUCHSIG@1", time_limit_minutes=5, start=0.0) is None
