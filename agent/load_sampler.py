"""The node's load indices, sampled from ``<proc root>/meminfo`` and ``<proc root>/stat``
every 5 seconds for fsched's load thresholds (the model: load.core.indices).

``fsched agent --proc-root DIR`` reads the two files under DIR instead of /proc, so that
tests and administrators can feed them.  A file that cannot be read or parsed is said
once in the log; until it reads again the heartbeat carries no indices (the controller
then keeps the last ones it had).
"""

from __future__ import annotations

import logging
from pathlib import Path

from load.core.indices import Indices, Sampler

log = logging.getLogger("agent.load")


class ProcLoad:
    def __init__(self, proc_root: str = "/proc") -> None:
        self.root = Path(proc_root)
        self._sampler: Sampler | None = None
        self.latest: Indices | None = None
        self._failing = False

    def sample(self) -> Indices | None:
        """Read the files once more: the first read sets E_0 = 0, each later one a sample."""
        try:
            meminfo = (self.root / "meminfo").read_text(encoding="ascii", errors="replace")
            stat = (self.root / "stat").read_text(encoding="ascii", errors="replace")
            if self._sampler is None:
                self._sampler = Sampler(meminfo, stat)
                self.latest = self._sampler.indices
            else:
                self.latest = self._sampler.sample(meminfo, stat)
        except (OSError, ValueError) as exc:
            if not self._failing:
                log.warning("load indices unavailable: %s: %s", self.root, exc)
            self._failing = True
            self.latest = None
            return None
        if self._failing:
            log.info("load indices readable again from %s", self.root)
        self._failing = False
        return self.latest
