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

Under load, API reads and submissions go to helper processes instead (config.helpers),
which run the same handler on the machine's other cores.

On PostgreSQL (``overlap``) a request goes to an idle thread whenever there is one: it
spends most of its time waiting for the database's answers (three round trips for a
submission), and the GIL is free meanwhile. Kept on the first thread, one server process
answered one request at a time: measured with 8 API clients, 180-250 submissions per
second from one process against 260-410 spread over its threads.
"""

from __future__ import annotations

import asyncio
import io
import time
from concurrent.futures import ThreadPoolExecutor
from tempfile import SpooledTemporaryFile
from typing import Any

from config import helpers
from config.wsgi_bridge import Response, call_wsgi, environ_for

# Bodies up to this size stay in memory (Django's FILE_UPLOAD_MAX_MEMORY_SIZE default).
_SPOOL_BYTES = 2_621_440
# The environ key of in_hand(): the name cluster.api.diag reads it by.
REQUESTS_IN_HAND = "fsched.requests_in_hand"
# A thread whose current request has run this long is passed over for new requests.
SLOW = 0.02


class WSGIOverASGI:
    """An ASGI HTTP application running a WSGI application on a few long-lived threads."""

    def __init__(
        self, wsgi_app: Any, threads: int, *, max_body: int | None = None, overlap: bool = False
    ) -> None:
        self.wsgi_app = wsgi_app
        self.overlap = overlap
        # Bodies over this are refused as they arrive (Django only checks a Content-Length
        # after the whole body was read and spooled here, to disk past _SPOOL_BYTES).
        self.max_body = max_body
        self.executors = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"http-{i}") for i in range(threads)
        ]
        self.busy = [0] * threads
        self.started = [0.0] * threads  # when the running request began (monotonic)
        self.helpers: list[Any] = []  # config.helpers.Helper, set by the server at start-up

    def _helper(self, scope: dict[str, Any]) -> Any:
        if not self.helpers or not helpers.serves(scope["method"], scope["path"]):
            return None
        if not any(self.busy) and not any(h.busy for h in self.helpers):
            # Alone, a request is answered sooner here: a helper adds two process wake-ups,
            # about a millisecond on a virtual machine whose other CPU sleeps.
            return None
        # Unlike threads, helpers run at the same time: the least busy one, unless this
        # process has fewer requests in hand.
        now = time.monotonic()
        usable = [h for h in self.helpers if h.usable(now, SLOW)]
        best = min(usable, key=lambda h: h.busy) if usable else None
        return best if best is not None and best.busy <= sum(self.busy) else None

    def in_hand(self) -> int:
        """Requests this process is running, on its threads and its helpers (sdiag's
        "Server thread count", read by cluster.api.diag)."""
        return sum(self.busy) + sum(h.busy for h in self.helpers)

    def _pick(self) -> int:
        now = time.monotonic()
        for i, busy in enumerate(self.busy):
            if busy == 0 or (not self.overlap and now - self.started[i] < SLOW):
                return i
        return min(range(len(self.busy)), key=self.busy.__getitem__)

    def _too_large(self, size: int) -> bool:
        return self.max_body is not None and size > self.max_body

    async def _refuse_body(self, send: Any) -> None:
        body = f'{{"error": "Request body larger than {self.max_body} bytes"}}'.encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        declared = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-length"), b"0")
        if declared.isdigit() and self._too_large(int(declared)):
            await self._refuse_body(send)
            return
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        if message.get("more_body"):
            body: Any = SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115 - closed below
            size = body.write(message.get("body", b""))
            while message.get("more_body"):
                if self._too_large(size):
                    body.close()
                    await self._refuse_body(send)
                    return
                message = await receive()
                if message["type"] == "http.disconnect":
                    body.close()
                    return
                size += body.write(message.get("body", b""))
            body.seek(0)
        else:  # the whole body in one message: what API clients send
            data = message.get("body", b"")
            body, size = io.BytesIO(data), len(data)
        if self._too_large(size):
            body.close()
            await self._refuse_body(send)
            return
        with body:
            environ = environ_for(scope, body)
            # The body as received (a chunked upload has no Content-Length; WSGI needs one).
            environ["CONTENT_LENGTH"] = str(size)
            status, headers, chunks = await self._respond(scope, environ)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        # The body was produced whole on the request's thread: one message carries it.
        await send({"type": "http.response.body", "body": b"".join(chunks)})

    async def _respond(self, scope: dict[str, Any], environ: dict[str, Any]) -> Response:
        loop = asyncio.get_running_loop()
        helper = self._helper(scope)
        if helper is not None:
            helper.busy += 1
            environ[REQUESTS_IN_HAND] = str(self.in_hand())  # a helper is sent str values
            try:
                return await loop.run_in_executor(helper.executor, helper.run, environ)
            except helpers.HelperUnavailable:
                environ["wsgi.input"].seek(0)  # never sent: run it here
            except helpers.HelperFailed:
                # Whether the request ran is unknown: say so rather than run it again.
                body = b'{"error": "the process running this request failed; check before retrying"}'
                return 503, [(b"content-type", b"application/json")], [body]
            finally:
                helper.busy -= 1
        i = self._pick()
        self.busy[i] += 1
        environ[REQUESTS_IN_HAND] = str(self.in_hand())  # a helper is sent str values
        try:
            return await loop.run_in_executor(self.executors[i], self._run, i, environ)
        finally:
            self.busy[i] -= 1

    def _run(self, i: int, environ: dict[str, Any]) -> Response:
        self.started[i] = time.monotonic()
        return call_wsgi(self.wsgi_app, environ)
