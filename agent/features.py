"""A node's active changeable features, as its ``helpers.conf`` Helpers report them
(``NodeFeaturesPlugins=node_features/helpers``, Slurm's power_save.html "Node Features").

At registration slurmd runs each Helper of the node with no argument; what it prints (one
feature a line, or separated by spaces or commas) among the features of its line are the
node's active ones, and the controller checks they cover its active changeable features.
A Helper that prints nothing (``/bin/true``) leaves the controller to decide; one that
fails or outlives ExecTime (10 s by default) reports nothing. Run without a shell: the
Helper path is the whole command.
"""

from __future__ import annotations

import logging
import re
import subprocess

from power.core.features import NodeFeatures

log = logging.getLogger(__name__)

DEFAULT_EXEC_TIME = 10  # seconds (helpers.conf ExecTime)
_WORDS = re.compile(r"[\s,]+")


def helper_features(features: NodeFeatures | None, node: str) -> str | None:
    """The active features the node's Helpers report, comma-joined; None when no Helper
    line covers the node (nothing is reported then)."""
    if features is None:
        return None
    lines = [line for line in features.lines if line.nodes is None or node in line.nodes]
    if not lines:
        return None
    timeout = features.exec_time or DEFAULT_EXEC_TIME
    active: set[str] = set()
    for line in lines:
        try:
            done = subprocess.run(
                [line.helper],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.error("node features helper %s for %s failed: %s", line.helper, node, exc)
            continue
        if done.returncode != 0:
            log.error("node features helper %s for %s exited %d", line.helper, node, done.returncode)
            continue
        words = _WORDS.split(done.stdout.decode("utf-8", "replace"))
        active |= {w for w in words if w in line.features}
    return ",".join(sorted(active))


__all__ = ["DEFAULT_EXEC_TIME", "helper_features"]
