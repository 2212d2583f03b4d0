"""The pieces that let HTTP helper processes serve requests beside the embedded server
(config.helpers): what a helper's request publishes reaches the server, writes from
several processes take turns at SQLite's gate, and which requests a helper may run."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest
from channels.layers import get_channel_layer
from django.db import transaction

from cluster import cycles, publish, triggers
from config import helpers
from config.sqlite.base import _Gate


@pytest.fixture
def relaying():
    before = triggers.installed()
    publish.relay_to_server()
    try:
        yield
    finally:
        publish._relay = None
        triggers.uninstall(triggers.installed())
        if before is not None:
            triggers.install(before)


def test_a_helpers_effects_are_kept_for_the_server(relaying, db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        publish.console_changed("jobs")
        publish.to_agent("node01", {"cmd": "cancel", "job_id": 7})
        triggers.request_schedule()
        # A pass is asked for at once (as in the server); publishing waits for the commit.
        assert publish.take_relayed() == [("schedule",)]
    assert publish.take_relayed() == [
        ("console", ["jobs"]),
        ("send", "node.node01", {"type": "agent.command", "payloads": [{"cmd": "cancel", "job_id": 7}]}),
    ]
    assert publish.take_relayed() == []  # taken once


def test_the_server_replays_a_helpers_effects(relaying, db, settings, django_capture_on_commit_callbacks):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    with django_capture_on_commit_callbacks(execute=True):
        publish.to_agent("node01", {"cmd": "cancel", "job_id": 7})
        publish.console_changed("jobs")
        triggers.request_schedule()
    effects = publish.take_relayed()
    publish._relay = None  # now the server
    kicked = cycles.EmbeddedCycles()  # not started: its wake-up flag shows the kick
    triggers.install(kicked)

    async def scenario() -> list[dict]:
        layer = get_channel_layer()
        agent, console = await layer.new_channel(), await layer.new_channel()
        await layer.group_add(publish.node_group("node01"), agent)
        await layer.group_add(publish.CONSOLE_GROUP, console)
        publish.bind_server_loop(asyncio.get_running_loop())
        try:
            await asyncio.to_thread(helpers.replay, effects)  # the helper's thread in the server
            return [await asyncio.wait_for(layer.receive(c), 2) for c in (agent, console)]
        finally:
            publish._server_loop = None

    received: list[list[dict]] = []
    try:
        runner = threading.Thread(target=lambda: received.append(asyncio.run(scenario())))
        runner.start()
        runner.join()
    finally:
        triggers.uninstall(kicked)
    assert received == [
        [
            {"type": "agent.command", "payloads": [{"cmd": "cancel", "job_id": 7}]},
            {"type": "console.changed", "topics": ["jobs"]},
        ]
    ]
    assert kicked._wake.is_set()


def test_writers_in_two_processes_take_turns_at_the_gate(tmp_path):
    database = str(tmp_path / "fsched.sqlite3")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1] + '.gate', os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(0.5)\n",
            database,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        gate = _Gate()
        gate.bind(database)
        start = time.monotonic()
        with gate:
            waited = time.monotonic() - start
            with gate:  # the thread holding it may take it again
                pass
    finally:
        holder.wait()
    assert waited >= 0.3


def test_helpers_run_reads_and_submissions_only():
    assert helpers.serves("GET", "/api/jobs/") and helpers.serves("POST", "/api/jobs/")
    assert not helpers.serves("POST", "/api/jobs/cancel/")
    assert not helpers.serves("POST", "/api/nodes/update/")
    assert not helpers.serves("GET", "/admin/")
