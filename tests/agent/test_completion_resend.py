"""Unacknowledged completions are sent again on the same connection (issue #11).

A controller whose database restarted may drop a completion while the websocket stays
up; the agent then never re-registers, so without a re-send the job stays RUNNING there
until its time limit. The real daemon runs against the fake controller, which simply
does not acknowledge.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from tests.agent.harness import FakeController, launch_object, run_with_agent

QUICK = "#!/bin/bash\nexit 4\n"


def run_resending(tmp_path: Path, scenario, resend_after: float) -> None:  # type: ignore[no-untyped-def]
    run_with_agent(tmp_path, lambda ctl, _agent: scenario(ctl), resend_after=resend_after)


def test_an_unacknowledged_completion_is_sent_again_later_and_less_often(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController) -> None:
        await ctl.send({"type": "launch", "job": launch_object(31, QUICK, work)})
        first = await ctl.expect("completed", job_id=31)
        sent = [time.monotonic()]
        for _ in range(2):
            again = await ctl.expect("completed", job_id=31, timeout=5)
            sent.append(time.monotonic())
            assert again == first  # the same completion: same end time, same seq
        gaps = [b - a for a, b in itertools.pairwise(sent)]
        assert gaps[0] > 0.3 and gaps[1] > 1.5 * gaps[0], gaps  # 0.4 s, then 0.8 s
        await ctl.send({"type": "ack", "job_ids": [31]})
        await ctl.nothing("completed", 2.0)

    run_resending(tmp_path, scenario, resend_after=0.4)


def test_a_cancel_for_a_job_whose_completion_is_unacknowledged_gets_the_completion(
    tmp_path: Path, work: Path
) -> None:
    async def scenario(ctl: FakeController) -> None:
        await ctl.send({"type": "launch", "job": launch_object(32, QUICK, work)})
        first = await ctl.expect("completed", job_id=32)
        # The controller missed it and its time limit came: it cancels a job long ended.
        await ctl.send({"type": "cancel", "job_id": 32, "kill_wait": 30})
        assert await ctl.expect("completed", job_id=32, timeout=2) == first
        await ctl.send({"type": "signal", "job_id": 32, "signal": "KILL"})
        assert await ctl.expect("completed", job_id=32, timeout=2) == first
        await ctl.send({"type": "ack", "job_ids": [32]})
        # Acknowledged: a late cancel is for a job not running here, and says nothing.
        await ctl.send({"type": "cancel", "job_id": 32, "kill_wait": 30})
        await ctl.nothing("completed", 1.0)

    run_resending(tmp_path, scenario, resend_after=60)


def test_an_acknowledged_completion_is_not_sent_again(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController) -> None:
        await ctl.send({"type": "launch", "job": launch_object(33, QUICK, work)})
        await ctl.expect("completed", job_id=33)
        await ctl.send({"type": "ack", "job_ids": [33]})
        await ctl.nothing("completed", 1.5)

    run_resending(tmp_path, scenario, resend_after=0.4)
