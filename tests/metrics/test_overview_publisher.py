"""The dashboard's one publisher on the real ASGI application (#15 point 6): fifty open
dashboards cost one read of the cluster per change, not fifty."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing.websocket import WebsocketCommunicator
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cluster import overview_publisher
from cluster.models import OverviewSample
from cluster.services.jobs import job_submit
from config.asgi import router

pytestmark = pytest.mark.django_db(transaction=True)

CLIENTS = 50
ORIGIN = (b"origin", b"http://127.0.0.1")


def pending_count(html: str) -> int:
    found = re.search(r'data-job-state="PENDING">.*?<dd>(\d+)</dd>', html, re.S)
    assert found, html[:500]
    return int(found.group(1))


def node_reads(queries: list[dict]) -> int:
    """The overview's read of the node table (states and resources): one per pass."""
    return sum('"cluster_node"."base_state"' in q["sql"] for q in queries)


async def receive_overview(comm: WebsocketCommunicator) -> str:
    message = json.loads(await comm.receive_from(timeout=10))
    assert message["type"] == "overview"
    return message["html"]


@pytest.fixture
def session_cookie(demo, users, client) -> bytes:
    client.force_login(users["bob"])
    return f"sessionid={client.cookies['sessionid'].value}".encode()


def test_fifty_dashboards_cost_one_read_per_change(demo, users, session_cookie):
    # A trend sample of now: no pass of this test is due to write one.
    OverviewSample.objects.create(time=timezone.now())
    # What one pass of the overview costs, read here directly (the second: caches warm).
    overview_publisher.render()
    with CaptureQueriesContext(connection) as one_pass:
        overview_publisher.render()
    assert node_reads(one_pass.captured_queries) == 1

    async def scenario() -> tuple[list[str], int, list[dict]]:
        comms = [
            WebsocketCommunicator(router, "/ws/overview/", headers=[ORIGIN, (b"cookie", session_cookie)])
            for _ in range(CLIENTS)
        ]
        for comm in comms:
            connected, _ = await comm.connect()
            assert connected
        # Each has been sent the overview: the first connection's pass, the text kept for the others.
        first = [await receive_overview(comm) for comm in comms]
        assert {pending_count(html) for html in first} == {0}
        for comm in comms:
            assert await comm.receive_nothing(timeout=0.05)
        publisher = overview_publisher.publisher()
        assert len(publisher.subscribers) == CLIENTS
        passes_before = publisher.passes

        loop = asyncio.get_running_loop()
        # Count the queries of the publisher's own thread, where each pass reads.
        capture = CaptureQueriesContext(connection)
        await loop.run_in_executor(publisher.executor, capture.__enter__)
        # A change, as a user's submission makes it: its note reaches the publisher after the commit.
        await sync_to_async(job_submit)(
            user=users["bob"], spec={"wrap": "true", "work_dir": "/tmp", "hold": True}
        )
        # Each dashboard gets the new figures once per pass: drained until quiet.
        pushed = [[await receive_overview(comm)] for comm in comms]
        await asyncio.sleep(1.0)  # long enough for any further pass to show
        for comm, got in zip(comms, pushed, strict=True):
            while not await comm.receive_nothing(timeout=0.05):
                got.append(await receive_overview(comm))

        def captured() -> list[dict]:  # the thread's own connection holds its log
            capture.__exit__(None, None, None)
            return list(capture.captured_queries)

        queries = await loop.run_in_executor(publisher.executor, captured)
        passes = publisher.passes - passes_before
        for comm in comms:
            await comm.disconnect()
        await overview_publisher.stop()
        return pushed, passes, queries

    pushed, passes, queries = async_to_sync(scenario)()
    # Every dashboard got the same texts, the last with the new job in it...
    assert all(got == pushed[0] for got in pushed) and pending_count(pushed[0][-1]) == 1
    # ...one per pass (the submission's notes may come in two commits), and each pass is
    # one read whatever the number of dashboards: the queries of one read, not fifty.
    assert 1 <= passes <= 2 and len(pushed[0]) == passes
    assert node_reads(queries) == passes
    assert len(queries) == passes * len(one_pass.captured_queries)


def test_a_dashboard_needs_a_login(demo):
    async def refused() -> bool:
        comm = WebsocketCommunicator(router, "/ws/overview/", headers=[ORIGIN])
        connected, _ = await comm.connect()
        return connected

    assert async_to_sync(refused)() is False


def test_private_data_keeps_other_users_events_and_nodes_off_their_dashboards(
    demo, users, client, private_data
):
    """With PrivateData=jobs,nodes a regular user's dashboard, pushed or rendered, names no
    other user's job and shows no node states; staff's shows both. One read serves both."""
    private_data("jobs,nodes")
    spec = {"wrap": "true", "work_dir": "/tmp", "hold": True, "name": "a"}
    job = job_submit(user=users["alice"], spec=spec)
    alices = f"job {job.job_ids[0]}"
    OverviewSample.objects.create(time=timezone.now())

    def cookie(name: str) -> bytes:
        own = Client()  # one client each: a login of another user would end the first session
        own.force_login(users[name])
        return f"sessionid={own.cookies['sessionid'].value}".encode()

    bob, admin = cookie("bob"), cookie("admin")

    async def scenario() -> tuple[str, str]:
        texts = []
        for who in (bob, admin):
            comm = WebsocketCommunicator(router, "/ws/overview/", headers=[ORIGIN, (b"cookie", who)])
            connected, _ = await comm.connect()
            assert connected
            texts.append(await receive_overview(comm))
            await comm.disconnect()
        await overview_publisher.stop()
        return texts[0], texts[1]

    pushed_bob, pushed_admin = async_to_sync(scenario)()
    assert alices not in pushed_bob and "data-node-state" not in pushed_bob
    assert "PrivateData=nodes" in pushed_bob
    assert alices in pushed_admin and "data-node-state" in pushed_admin
    client.force_login(users["bob"])
    page = client.get("/").content.decode()
    assert alices not in page and "data-node-state" not in page
    with CaptureQueriesContext(connection) as both:
        texts = overview_publisher.render(frozenset({"", "jobs,nodes"}))
    with CaptureQueriesContext(connection) as one:
        overview_publisher.render()
    assert set(texts) == {"", "jobs,nodes"} and len(both.captured_queries) == len(one.captured_queries)


def test_the_publisher_hears_change_notes_only_while_a_dashboard_is_open(
    demo, users, session_cookie, monkeypatch
):
    """With no dashboard open, the server's publisher only samples the trend: it is not in
    the console group, where every change of the cluster would reach it (through Redis in
    distributed mode) to be thrown away."""
    monkeypatch.setattr(overview_publisher, "HEAR_WAIT", 0.1)

    async def until(check, what: str) -> None:
        for _ in range(100):
            if check():
                return
            await asyncio.sleep(0.05)
        raise AssertionError(what)

    async def scenario() -> None:
        publisher = overview_publisher.publisher(keep_running=True)
        await asyncio.sleep(0.3)
        assert not publisher.listening
        comm = WebsocketCommunicator(router, "/ws/overview/", headers=[ORIGIN, (b"cookie", session_cookie)])
        connected, _ = await comm.connect()
        assert connected
        assert pending_count(await receive_overview(comm)) == 0
        await until(lambda: publisher.listening, "a dashboard is open: the publisher should listen")
        await sync_to_async(job_submit)(
            user=users["bob"], spec={"wrap": "true", "work_dir": "/tmp", "hold": True}
        )
        assert pending_count(await receive_overview(comm)) == 1  # the note was heard
        await comm.disconnect()
        await until(lambda: not publisher.listening, "the last dashboard closed: it should leave the group")
        # The next dashboard is not sent the text kept from before: notes were not heard since.
        await sync_to_async(job_submit)(
            user=users["bob"], spec={"wrap": "true", "work_dir": "/tmp", "hold": True}
        )
        again = WebsocketCommunicator(router, "/ws/overview/", headers=[ORIGIN, (b"cookie", session_cookie)])
        connected, _ = await again.connect()
        assert connected
        assert pending_count(await receive_overview(again)) == 2
        await again.disconnect()
        await overview_publisher.stop()

    async_to_sync(scenario)()
