"""The CLI when the controller's database is unavailable (503) or the controller unreachable.

A loopback server answers as config/unavailable.py does: 503, ``Retry-After`` and
``{"error", "stored": false, "retry_after"}``.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from cli.main import main

NOT_STORED = "The database is unavailable for a moment: nothing was stored. Retry in 1 seconds."


class Unavailable:
    """Answers the first ``down`` requests 503 "nothing was stored", the others 201."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.requests: list[tuple[float, dict]] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")[1:]
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
                while len(body) < int(headers.get("content-length", 0)):
                    body += conn.recv(65536)
                self.requests.append((time.monotonic(), headers))
                if len(self.requests) <= self.down:
                    status, payload = 503, {"error": NOT_STORED, "stored": False, "retry_after": 1}
                else:
                    status, payload = 201, {"job_id": 31, "job_ids": [31]}
                out = json.dumps(payload).encode()
                extra = "Retry-After: 1\r\n" if status == 503 else ""
                conn.sendall(
                    f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(out)}\r\n"
                    f"{extra}Connection: close\r\n\r\n".encode()
                    + out
                )


@pytest.fixture
def unavailable(monkeypatch):
    def start(down: int) -> Unavailable:
        server = Unavailable(down)
        monkeypatch.setenv("FSCHED_URL", server.url)
        return server

    return start


def test_sbatch_retries_a_not_stored_submission_after_retry_after_with_the_same_key(unavailable, capsys):
    server = unavailable(1)
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "Submitted batch job 31\n"
    retrying = "Retrying in 1s with the same Idempotency-Key"
    assert f"sbatch: job not stored: {NOT_STORED} {retrying}" in captured.err
    (first_at, first), (second_at, second) = server.requests
    assert first["idempotency-key"] == second["idempotency-key"]
    assert second_at - first_at >= 0.95  # it waited for Retry-After


def test_sbatch_refused_twice_says_nothing_was_stored_in_the_servers_words(unavailable, capsys):
    server = unavailable(5)
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 1
    err = capsys.readouterr().err
    assert err.endswith(f"sbatch: error: Batch job submission failed: {NOT_STORED}\n")
    assert "unknown" not in err
    assert len(server.requests) == 2  # once more, not more


def test_other_commands_print_the_servers_words(unavailable, capsys):
    unavailable(5)
    assert main(["fsched", "squeue"]) == 1
    assert NOT_STORED in capsys.readouterr().err


def test_an_unreachable_controller_is_said_in_slurms_words_and_names_the_url(monkeypatch, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("FSCHED_URL", f"http://127.0.0.1:{port}")
    assert main(["fsched", "squeue"]) == 1
    assert capsys.readouterr().err == (
        "fsched: error: Unable to contact slurm controller (connect failure)\n"
        f"fsched: error: tried http://127.0.0.1:{port}: Connection refused\n"
    )
