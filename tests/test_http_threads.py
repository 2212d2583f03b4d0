"""Which of the server's threads runs a request (config/http.py).

On PostgreSQL a request waits on the database most of its time: requests in hand at the
same time run on threads of their own, or one server process answers one at a time.
"""

from __future__ import annotations

import asyncio
import threading

from config.http import WSGIOverASGI

THREADS = 4


def _app(barrier: threading.Barrier, seen: list[str]):
    def app(environ, start_response):
        seen.append(threading.current_thread().name)
        # Passes only when every request is running at once (a database wait, here).
        barrier.wait(timeout=2)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    return app


async def _request(http: WSGIOverASGI) -> int:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/api/whoami/", "headers": [], "query_string": b""}
    await http(scope, receive, send)
    return sent[0]["status"]


def _run_together(overlap: bool) -> tuple[list[int], list[str], bool]:
    barrier = threading.Barrier(THREADS)
    seen: list[str] = []
    http = WSGIOverASGI(_app(barrier, seen), THREADS, overlap=overlap)

    async def main():
        return await asyncio.gather(*(_request(http) for _ in range(THREADS)), return_exceptions=True)

    # A thread of its own: other tests (the browser's) leave an event loop running in this one.
    results: list = []
    runner = threading.Thread(target=lambda: results.extend(asyncio.run(main())))
    runner.start()
    runner.join()
    for executor in http.executors:
        executor.shutdown()
    return results, seen, barrier.broken


def test_on_postgresql_requests_in_hand_together_run_on_threads_of_their_own():
    results, seen, broken = _run_together(overlap=True)
    assert results == [200] * THREADS
    assert not broken
    assert len(set(seen)) == THREADS


def test_on_sqlite_a_quick_request_keeps_the_first_thread():
    # SQLite's writes take turns anyway: the requests queue on the first thread, so the
    # barrier that needs all of them at once breaks.
    _results, seen, broken = _run_together(overlap=False)
    assert broken
    assert seen[0].startswith("http-0")
