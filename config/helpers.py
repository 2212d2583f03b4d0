"""HTTP helper processes for the embedded server: API reads and job submissions on another core.

The embedded server is one process: its event loop, the websocket consumers, the
in-memory channel layer and the cycles live there, and Python runs one thread of a
process at a time.  Every API request therefore competed for one core with the scheduler
passes and the agents' messages, while the machine's other cores idled (8 clients
submitting jobs kept the server at 100% of one core, the machine at 120% of 200).

A helper is a child process running the same Django application.  The server hands it
the requests that only read or submit jobs (``serves``) and it hands back the response
with what the request would have published or asked for (console notes, commands to
agents, a scheduler pass: ``cluster.publish.relayed``), which the server then does
before it answers, as it would have for a request it ran itself.  Everything else stays
in the server: a request that may start a power program, for one, must run where the
power cycle tracks its programs.

The processes share the database through SQLite's write gate (``config.sqlite.base``);
every service already allows other processes to write (distributed mode runs several).
A helper exits when the server closes its end of the socket, or dies.
"""

from __future__ import annotations

import io
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from config.wsgi_bridge import Response, call_wsgi

log = logging.getLogger("fsched.server")

# Requests a helper may run: reads of the API, and job submission (sbatch), by far the
# most frequent write.  Cancels, node and configuration changes stay in the server.
_SUBMIT_PATHS = frozenset({"/api/jobs/"})


def serves(method: str, path: str) -> bool:
    if method in ("GET", "HEAD"):
        return path.startswith("/api/")
    return method == "POST" and path in _SUBMIT_PATHS


class HelperUnavailable(RuntimeError):
    """The helper could not be handed the request (it has ended): the server may run it."""


class HelperFailed(RuntimeError):
    """The helper ended while it had the request: whether it ran is unknown."""


class Helper:
    """One helper process and the server's thread that talks to it (one request at a time)."""

    def __init__(self, index: int) -> None:
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "config.helpers", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
        )
        theirs.close()
        self.conn = Connection(ours.detach())
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"http-helper-{index}")
        self.ready = threading.Event()
        self.failed = False
        self.busy = 0
        self.started = 0.0  # when the request it runs began (monotonic)
        self.executor.submit(self._wait_ready)

    def _wait_ready(self) -> None:
        try:
            if self.conn.recv() == "ready":
                self.ready.set()
                return
        except (EOFError, OSError):
            pass
        self.failed = True
        log.error("HTTP helper process %s did not start; its requests run in the server", self.process.pid)

    def usable(self, now: float, slow: float) -> bool:
        if not self.ready.is_set() or self.failed:
            return False
        if self.process.poll() is not None:
            self.failed = True
            log.error("HTTP helper process %s ended; its requests run in the server", self.process.pid)
            return False
        return self.busy == 0 or now - self.started < slow

    def run(self, environ: dict[str, Any]) -> Response:
        """On the helper's thread: the request there, its effects here."""
        self.started = time.monotonic()
        wire = {k: v for k, v in environ.items() if isinstance(v, str | bool | tuple)}
        try:
            self.conn.send((wire, environ["wsgi.input"].read()))
        except OSError as exc:  # its end of the socket is closed: it never saw the request
            self.failed = True
            log.error("HTTP helper process %s has ended: %s", self.process.pid, exc)
            raise HelperUnavailable(str(exc)) from None
        try:
            status, headers, body, effects = self.conn.recv()
        except (EOFError, OSError) as exc:
            self.failed = True
            log.error("HTTP helper process %s failed: %s", self.process.pid, exc)
            raise HelperFailed(str(exc)) from None
        replay(effects)
        return status, headers, [body]

    def stop(self, timeout: float = 5) -> None:
        self.conn.close()  # the helper sees the end of its socket and exits
        self.executor.shutdown(wait=False, cancel_futures=True)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start(count: int) -> list[Helper]:
    return [Helper(i) for i in range(count)]


def stop(helpers: list[Helper]) -> None:
    for helper in helpers:
        helper.stop()


def serve(fd: int) -> int:
    """The helper's side: requests in, responses and effects out, until the server goes."""
    # Ctrl-C reaches the whole process group: the server stops us by closing the socket.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.wsgi import get_wsgi_application  # noqa: PLC0415

    app = get_wsgi_application()
    from cluster import publish  # noqa: PLC0415

    publish.relay_to_server()
    conn = Connection(fd)
    conn.send("ready")
    while True:
        try:
            wire, body = conn.recv()
        except (EOFError, OSError):
            return 0
        environ = {**wire, "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr}
        try:
            status, headers, chunks = call_wsgi(app, environ)
        except Exception:  # Django turns view errors into responses; this is anything else
            log.exception("HTTP helper: request failed")
            status, headers, chunks = 500, [(b"content-type", b"text/plain")], [b"Server Error (500)"]
        try:
            conn.send((status, headers, b"".join(chunks), publish.take_relayed()))
        except OSError:
            return 0


def replay(effects: list[tuple[Any, ...]]) -> None:
    """In the server: publish and ask for what a helper's request would have."""
    from cluster import publish, triggers  # noqa: PLC0415 - Django is set up by now

    for kind, *args in effects:
        if kind == "send":
            publish.send_now(*args)
        elif kind == "console":
            publish.console_note_now(set(args[0]))
        elif kind == "schedule":
            triggers.request_schedule()
        elif kind == "power":
            triggers.request_power()
        else:
            log.error("unknown effect from an HTTP helper: %s", kind)


if __name__ == "__main__":
    raise SystemExit(serve(int(sys.argv[1])))
