"""The server's own bounds on input (config.asgi, config.http): a websocket to an unknown
path is refused at the handshake, and a body over the limit is refused as it arrives."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from asgiref.sync import async_to_sync
from channels.testing.websocket import WebsocketCommunicator

from cluster.models import Job
from config.asgi import http_app, router

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("path", ["/ws/nosuch/", "/ws/", "/ws/agent/extra/", "/elsewhere"])
def test_a_websocket_to_an_unknown_path_closes_without_a_traceback(path, caplog):
    async def scenario():
        comm = WebsocketCommunicator(router, path)
        connected, _code = await comm.connect()
        await comm.disconnect()
        return connected

    with caplog.at_level(logging.ERROR):
        assert async_to_sync(scenario)() is False
    assert not [r for r in caplog.records if r.exc_info]


def _post(chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> tuple[int, dict, int]:
    """POST /api/jobs/ through the server's HTTP application; (status, body, chunks read)."""
    read = 0

    async def receive():
        nonlocal read
        read += 1
        if read > len(chunks):
            await asyncio.sleep(3600)  # a client that never sends the rest
        return {"type": "http.request", "body": chunks[read - 1], "more_body": read < len(chunks)}

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/jobs/",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), *headers],
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 5000),
    }

    async def run():
        await asyncio.wait_for(http_app(scope, receive, send), timeout=10)

    async_to_sync(run)()
    return sent[0]["status"], json.loads(sent[1]["body"]), read


def test_a_streamed_body_over_the_limit_is_refused_before_the_rest_is_read(demo):
    limit = http_app.max_body
    chunk = b"[" * (1024 * 1024)
    chunks = [chunk] * (limit // len(chunk) + 50)  # 50 MB more than the limit
    status, body, read = _post(chunks, [])
    assert status == 413
    assert body == {"error": f"Request body larger than {limit} bytes"}
    assert read <= limit // len(chunk) + 2
    assert Job.objects.count() == 0


def test_a_declared_length_over_the_limit_is_refused_before_reading(demo):
    status, _body, read = _post([b"{}"], [(b"content-length", str(10**12).encode())])
    assert (status, read) == (413, 0)


def test_a_body_within_the_limit_reaches_the_api(demo):
    status, body, _read = _post([b'{"wrap": "true", ', b'"work_dir": "/tmp"}'], [])
    # No token: the API answers (401), the server did not refuse the body.
    assert status == 401, body
