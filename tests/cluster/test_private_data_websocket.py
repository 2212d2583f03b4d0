"""PrivateData=jobs and the console's websocket (#15 point 1): the push carries only the
name of what changed, never a job, and the fragment the page fetches on it, through the one
visibility rule, leaves another user's job out."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing.websocket import WebsocketCommunicator

from cluster.services.jobs import job_submit
from config.asgi import router

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_push_about_another_users_job_refreshes_nothing_of_it(private_data, users, client):
    private_data("jobs")
    client.force_login(users["bob"])
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    submitted: list[int] = []

    async def pushed():
        comm = WebsocketCommunicator(
            router, "/ws/console/", headers=[(b"origin", b"http://127.0.0.1"), (b"cookie", cookie)]
        )
        connected, _ = await comm.connect()
        assert connected
        spec = {"wrap": "echo alice-secret-ws", "work_dir": "/tmp", "hold": True}
        submitted.append((await sync_to_async(job_submit)(user=users["alice"], spec=spec)).job_ids[0])
        message = await comm.receive_json_from(timeout=5)
        assert message == {"type": "changed", "topics": ["jobs"]}
        await comm.disconnect()

    async_to_sync(pushed)()
    # What live.js fetches on "jobs": the job table and the summary, as bob.
    for fragment in ("/jobs/_table?state=all", "/_summary", "/_events"):
        html = client.get(fragment).content.decode()
        assert f'data-job-id="{submitted[0]}"' not in html, fragment
        assert "alice" not in html, fragment
    client.force_login(users["alice"])
    assert f'data-job-id="{submitted[0]}"' in client.get("/jobs/_table?state=all").content.decode()
