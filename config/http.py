"""HTTP for the ASGI server: Django's synchronous handler, one thread hop per request.

Django's ASGI handler runs a synchronous middleware or view by hopping between the event
loop and a worker thread, once per adaptation: with this project's middleware (sessions,
CSRF, messages, auditlog: synchronous) a request hopped three times, and every API
request paid about a millisecond for it (measured with py-spy on ``GET /api/whoami/``:
3.0 ms of server CPU per request against 2.0 ms this way).  Here the event loop reads the
body, one thread runs the whole WSGI handler (middleware, view, response iteration), and
the loop sends the result.

The threads are few and long-lived so each keeps its database connection.  Requests go
to the first thread unless what it runs has taken longer than ``SLOW`` seconds (a big
listing, a report, a write waiting for the scheduler's transaction): the GIL lets one
thread run Python at a time anyway, and several threads taking turns on it (and on
SQLite's write gate) cost more than they overlap.  Measured with 8 API clients
submitting jobs: 2.2 to 2.6 ms of server CPU per submission on one thread, 3.2 to 4.3 ms
spread over two or four.  A slow request still does not hold the others back.
"""

from __future__ import annotations

import asyncio
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from tempfile import SpooledTemporaryFile
from typing import Any

# Bodies up to this size stay in memory (Django's FILE_UPLOAD_MAX_MEMORY_SIZE default).
_SPOOL_BYTES = 2_621_440
# A thread whose current request has run this long is passed over for new requests.
SLOW = 0.02


def environ_for(scope: dict[str, Any], body: Any) -> dict[str, Any]:
    """The WSGI environ of an ASGI HTTP scope (PEP 3333; headers as Django's ASGI handler joins them)."""
    script_name = scope.get("root_path", "")
    path = scope["path"]
    if script_name and path.startswith(script_name):
        path = path[len(script_name) :]
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name.encode().decode("latin1"),
        "PATH_INFO": path.encode().decode("latin1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] if server[1] is not None else 80),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if client := scope.get("client"):
        environ["REMOTE_ADDR"] = client[0]
        environ["REMOTE_PORT"] = str(client[1])
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin1").upper().replace("-", "_")
        key = name if name in {"CONTENT_LENGTH", "CONTENT_TYPE"} else f"HTTP_{name}"
        value = raw_value.decode("latin1")
        if key in environ:
            value = environ[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
        environ[key] = value
    return environ


class WSGIOverASGI:
    """An ASGI HTTP application running a WSGI application on a few long-lived threads."""

    def __init__(self, wsgi_app: Any, threads: int) -> None:
        self.wsgi_app = wsgi_app
        self.executors = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"http-{i}") for i in range(threads)
        ]
        self.busy = [0] * threads
        self.started = [0.0] * threads  # when the running request began (monotonic)

    def _pick(self) -> int:
        now = time.monotonic()
        for i, busy in enumerate(self.busy):
            if busy == 0 or now - self.started[i] < SLOW:
                return i
        return min(range(len(self.busy)), key=self.busy.__getitem__)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        with SpooledTemporaryFile(max_size=_SPOOL_BYTES) as body:
            size = 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                size += body.write(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body.seek(0)
            environ = environ_for(scope, body)
            # The body as received (a chunked upload has no Content-Length; WSGI needs one).
            environ["CONTENT_LENGTH"] = str(size)
            i = self._pick()
            self.busy[i] += 1
            try:
                status, headers, chunks = await asyncio.get_running_loop().run_in_executor(
                    self.executors[i], self._run, i, environ
                )
            finally:
                self.busy[i] -= 1
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for chunk in chunks:
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    def _run(self, i: int, environ: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        self.started[i] = time.monotonic()
        started: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [status, headers]
            return chunks.append

        chunks: list[bytes] = []
        result = self.wsgi_app(environ, start_response)
        try:
            # The whole body is produced here, on the request's thread: a streamed response
            # (FileResponse) reads its file and the database on the thread that owns them.
            chunks.extend(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers = started
        return (
            int(status.split(" ", 1)[0]),
            [(name.lower().encode("latin1"), value.encode("latin1")) for name, value in headers],
            chunks,
        )
