"""sbatch ``--signal=[{R|B}:]SIG[@TIME]`` for a job's steps (pure: the times are parameters).

Slurm sends the signal TIME seconds before the job's time limit "to all job steps, but
not the batch shell itself" unless ``B:`` asks for the batch shell alone (sbatch(1)).  The
agent of the batch host signals the batch shell for ``B:`` (agent/job_signals.py); every
other form reaches the steps: each step launch carries the signal and the instant, and
the agent running its tasks signals them then.
"""

from __future__ import annotations

from slurmwords.job_options import parse_signal


def step_warning(
    signal: str, *, time_limit_minutes: int | None, start: float, paused_seconds: int = 0
) -> tuple[int, float] | None:
    """(signal number, epoch seconds to send it) for a job's steps, or None: no
    ``--signal``, a ``B:`` one (the batch shell's alone), no time limit, or a value that
    does not parse (the controller checked it at submission)."""
    if not signal or not time_limit_minutes or time_limit_minutes <= 0:
        return None
    try:
        spec = parse_signal(signal)
    except ValueError:
        return None
    if spec.batch_only:
        return None
    # The limit counts run time: a suspension moves the end, and the warning with it.
    end = start + time_limit_minutes * 60.0 + paused_seconds
    return spec.number, end - spec.seconds
