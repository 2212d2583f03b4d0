"""The faults of the crash test (test_crash_e2e.py) and the moments they strike.

A moment is read from the jobs' marker file: "during launches" is right after a job's
first line appears (its ``started`` is on its way to the controller), "during
completions" right after a job's last line appears (its completion is about to be
sent).  The plan is drawn from the test's seeded ``random.Random``.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Moment:
    name: str
    marker: str  # the marker line that opens it

    def wait(self, markers: Path, timeout: float) -> bool:
        """Until a new ``marker`` line is appended; False after ``timeout`` seconds."""
        seen = self._count(markers)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._count(markers) > seen:
                return True
            time.sleep(0.005)
        return False

    def _count(self, markers: Path) -> int:
        try:
            text = markers.read_text()
        except FileNotFoundError:
            return 0
        return text.count(f"\n{self.marker} ") + text.startswith(f"{self.marker} ")


LAUNCH = Moment("during launches", "start")
COMPLETION = Moment("during completions", "end")


@dataclass(frozen=True)
class Service:
    """A service .ci/run started, restarted by the command it exports in ``env``."""

    name: str
    env: str


POSTGRES = Service("PostgreSQL", "FSCHED_CI_RESTART_POSTGRES")
REDIS = Service("Redis", "FSCHED_CI_RESTART_REDIS")


@dataclass(frozen=True)
class Fault:
    processes: tuple[str, ...]  # what gets kill -9: "server", "agent"
    moment: Moment
    after: float  # seconds after the previous fault before waiting for the moment
    services: tuple[Service, ...] = ()

    def __str__(self) -> str:
        what = [f"kill -9 {' and '.join(self.processes)}"] if self.processes else []
        what += [f"restart {s.name}" for s in self.services]
        return f"{' + '.join(what)} {self.moment.name}"


KILLS = (("agent",), ("server",), ("agent", "server"))


def plan_faults(rng: random.Random, *, distributed: bool, extra: int = 3) -> list[Fault]:
    """Each kill at each moment once, ``extra`` more drawn at random, in a random order;
    in distributed mode PostgreSQL and Redis restarts among them when .ci/run says how."""
    kinds = [(kill, moment, ()) for kill in KILLS for moment in (LAUNCH, COMPLETION)]
    kinds += [(rng.choice(KILLS), rng.choice((LAUNCH, COMPLETION)), ()) for _ in range(extra)]
    if distributed:
        services = [s for s in (POSTGRES, REDIS) if os.environ.get(s.env)]
        kinds += [((), rng.choice((LAUNCH, COMPLETION)), (s,)) for s in services]
        if len(services) == 2:
            kinds.append((("server",), LAUNCH, (POSTGRES, REDIS)))
    rng.shuffle(kinds)
    return [Fault(kill, moment, rng.uniform(0.5, 3.0), services) for kill, moment, services in kinds]
