"""A server worker dies with the supervisor that started it.

``fsched server --workers N`` runs uvicorn's supervisor, whose N workers are the
processes that answer requests and hold the agents' websockets. Killed outright (the
OOM killer, ``kill -9``), the supervisor left them running, unsupervised, on its port: a
restarted server could not bind it, and the old workers went on serving. The kernel
kills each worker when its supervisor goes (Linux ``PR_SET_PDEATHSIG``), as systemd
kills the whole unit's cgroup. A supervisor that stops in order stops its workers first,
so this never fires then.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a worker spawned by uvicorn's supervisor (a multiprocessing child): be killed
    when it dies. The server run alone (one process) is nobody's worker: left alone."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: nothing to ask the kernel
        return
    if os.getppid() != parent.pid:  # gone already, before the request took effect
        os._exit(1)
