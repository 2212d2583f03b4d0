"""The CLI when the controller's database is unavailable (503) or the controller unreachable.

A loopback server answers as cluster/unavailable.py does: 503, ``Retry-After`` and
``{"error", "stored": false, "retry_after"}``.
"""

from __future__ import annotations

import socket

import pytest

from cli.main import main
from tests.cli.breaking_server import NOT_STORED, NOT_STORED_MESSAGE, BreakingServer


@pytest.fixture
def unavailable(monkeypatch):
    def start(down: int) -> BreakingServer:
        """Answers the first ``down`` requests 503 "nothing was stored", the others 201."""
        server = BreakingServer([NOT_STORED] * down, {"job_id": 31, "job_ids": [31]})
        monkeypatch.setenv("FSCHED_URL", server.url)
        return server

    return start


def test_sbatch_retries_a_not_stored_submission_after_retry_after_with_the_same_key(unavailable, capsys):
    server = unavailable(1)
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "Submitted batch job 31\n"
    retrying = "Retrying in 1s with the same Idempotency-Key"
    assert f"sbatch: job not stored: {NOT_STORED_MESSAGE} {retrying}" in captured.err
    first, second = server.requests
    assert first["headers"]["idempotency-key"] == second["headers"]["idempotency-key"]
    assert second["at"] - first["at"] >= 0.95  # it waited for Retry-After


def test_sbatch_refused_twice_says_nothing_was_stored_in_the_servers_words(unavailable, capsys):
    server = unavailable(5)
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 1
    err = capsys.readouterr().err
    assert err.endswith(f"sbatch: error: Batch job submission failed: {NOT_STORED_MESSAGE}\n")
    assert "unknown" not in err
    assert len(server.requests) == 2  # once more, not more


def test_other_commands_print_the_servers_words(unavailable, capsys):
    unavailable(5)
    assert main(["fsched", "squeue"]) == 1
    assert NOT_STORED_MESSAGE in capsys.readouterr().err


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
