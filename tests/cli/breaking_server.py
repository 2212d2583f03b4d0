"""A loopback HTTP server that breaks connections on cue, for the CLI's retry tests.

``http.server`` always answers once it has read a request; this one reads the whole
request (so the client has sent it) and then, per a script of actions, closes the
connection, resets it, or answers.  Each request is recorded with its headers.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time

CLOSE = "close"  # read the request, close without a word (the server died mid-request)
RESET = "reset"  # read the request, answer with a TCP RST
UNKNOWN = "503"  # the embedded server's "outcome unknown" answer (config/http.py)
RESTART = "restart"  # close, then refuse connections for a while (a controller restarting)
# cluster/unavailable.py's answer when the database is down before the commit.
NOT_STORED = "not stored"
NOT_STORED_MESSAGE = "The database is unavailable for a moment: nothing was stored. Retry in 1 seconds."
DOWN_FOR = 0.6  # seconds RESTART refuses connections


class BreakingServer:
    def __init__(self, actions: list[str], answer: dict) -> None:
        """``actions``: what to do with the 1st, 2nd... request; later ones are answered
        ``201 answer``."""
        self.actions = list(actions)
        self.answer = answer
        self.requests: list[dict] = []
        self.refused_for = 0.0
        self.listener = self._listen(0)
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @staticmethod
    def _listen(port: int) -> socket.socket:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(8)
        return listener

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                request = _read_request(conn)
                if request is None:
                    continue
                request["at"] = time.monotonic()
                self.requests.append(request)
                action = self.actions.pop(0) if self.actions else "answer"
                if action == RESTART:
                    # The listener first: closed after the connection, it could still take
                    # the client's quick retry into its backlog and then reset it, which
                    # is not a restarting controller's refusal (a flake under load).
                    self.listener.close()
                    conn.close()
                    down = time.monotonic()
                    time.sleep(DOWN_FOR)
                    self.listener = self._listen(self.port)
                    self.refused_for = time.monotonic() - down
                elif action == RESET:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                elif action == UNKNOWN:
                    _answer(
                        conn, 503, {"error": "the process running this request failed; check before retrying"}
                    )
                elif action == NOT_STORED:
                    body = {"error": NOT_STORED_MESSAGE, "stored": False, "retry_after": 1}
                    _answer(conn, 503, body, "Retry-After: 1\r\n")
                elif action != CLOSE:
                    _answer(conn, 201, self.answer)

    def close(self) -> None:
        self.listener.close()


def _read_request(conn: socket.socket) -> dict | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    request_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length", 0)):
        body += conn.recv(65536)
    method, path, _ = request_line.split(" ", 2)
    return {"method": method, "path": path, "headers": headers, "body": json.loads(body) if body else None}


def _answer(conn: socket.socket, status: int, payload: dict, extra: str = "") -> None:
    data = json.dumps(payload).encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n{extra}"
    conn.sendall((head + "Connection: close\r\n\r\n").encode() + data)
