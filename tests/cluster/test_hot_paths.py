"""The submission path's shortcuts (plain statements instead of ORM queries, the cached
configuration, one thread hop per HTTP request, merged console notes) behave as the
long way round did."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import HttpCommunicator
from django.db import connection
from django.utils import timezone

from cluster import publish, triggers
from cluster.api.auth import TokenAuthentication
from cluster.models import ClusterConfig, Event, Job, JobIdCounter
from cluster.services import jobs, rows
from cluster.services.api_tokens import token_issue
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_cancel, job_submit
from cluster.services.scheduling import build_snapshot, schedule_pass


def test_the_token_names_its_own_user(demo, api):
    assert api("alice").get("/api/whoami/").json() == {"username": "alice", "is_staff": False}
    assert api("admin").get("/api/whoami/").json() == {"username": "admin", "is_staff": True}
    job_id = api("bob").post("/api/jobs/", {"wrap": "true"}, format="json").json()["job_id"]
    assert Job.objects.get(pk=job_id).user == "bob"


def test_an_inactive_users_token_is_refused(demo, api, users):
    client = api("alice")
    users["alice"].is_active = False
    users["alice"].save()
    assert client.get("/api/whoami/").status_code == 401


def test_saving_the_authenticated_user_keeps_what_was_not_read(demo, users):
    token, text = token_issue(users["alice"])
    user, auth = TokenAuthentication().authenticate_credentials(text)
    assert auth.pk == token.pk and auth.prefix == token.prefix and auth.user_id == users["alice"].pk
    user.first_name = "Alice"
    user.save()
    stored = type(user).objects.get(pk=user.pk)
    assert stored.first_name == "Alice" and stored.check_password("alice-pw")


def test_the_configuration_read_follows_every_save(demo):
    first = ClusterConfig.current()
    assert ClusterConfig.current() is first  # unchanged: the process's copy
    cfg = ClusterConfig.for_update()
    cfg.options = {**cfg.options, "MaxJobCount": 7}
    cfg.save(update_fields=["options"])
    assert ClusterConfig.current().option_int("MaxJobCount", 0) == 7
    # Another process's save: only the row changed, this process's copy did not.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE cluster_clusterconfig SET options = %s, revision = %s WHERE id = 1",
            [json.dumps({"MaxJobCount": 3}), "elsewhere"],
        )
    assert ClusterConfig.current().option_int("MaxJobCount", 0) == 3


def test_a_submitted_job_is_stored_as_the_orm_would(demo, users):
    spec = {
        "wrap": "echo hi",
        "work_dir": "/tmp",
        "argv": ["a", "b c"],
        "environment": {"X": "1"},
        "begin": "now+1hour",
        "time": "5",
        "mem": "1G",
    }
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    job = Job.objects.get(pk=job_id)
    assert (job.argv, job.environment) == (["a", "b c"], {"X": "1"})
    assert (job.time_limit, job.mem_per_node) == (5, 1024)
    assert job.submitter == users["alice"] and job.state == "PENDING" and job.requeue is True
    assert job.begin_time > job.submit_time and job.submit_time.tzinfo is not None
    event = Event.objects.get(job_id=job_id)
    assert (event.new_state, event.user, event.time) == ("PENDING", "alice", job.submit_time)


def test_job_ids_start_at_one_and_never_repeat(demo, users):
    JobIdCounter.objects.all().delete()
    first = job_submit(user=users["alice"], spec={"wrap": "true"}).job_ids
    array = job_submit(user=users["alice"], spec={"wrap": "true", "array": "1-3"}).job_ids
    assert first == [1] and array == [2, 3, 4]


def test_only_a_job_that_can_start_asks_for_a_pass(
    demo, users, monkeypatch, django_capture_on_commit_callbacks
):
    asked = []
    monkeypatch.setattr(triggers, "request_schedule", lambda: asked.append(1))
    with django_capture_on_commit_callbacks(execute=True):
        job_submit(user=users["alice"], spec={"wrap": "true", "hold": True})
        job_submit(user=users["alice"], spec={"wrap": "true", "begin": "now+1hour"})
    assert asked == []
    with django_capture_on_commit_callbacks(execute=True):
        job_submit(user=users["alice"], spec={"wrap": "true"})
    assert asked == [1]


@pytest.mark.django_db(transaction=True)
def test_http_through_the_asgi_application(demo, users):
    from config.asgi import router

    token = token_issue(users["alice"])[1]
    auth = (b"authorization", f"Token {token}".encode())

    async def scenario() -> None:
        get = HttpCommunicator(router, "GET", "/api/whoami/", headers=[auth])
        response = await get.get_response(timeout=10)
        assert response["status"] == 200 and json.loads(response["body"])["username"] == "alice"
        body = json.dumps({"wrap": "true", "work_dir": "/tmp"}).encode()
        post = HttpCommunicator(
            router, "POST", "/api/jobs/", body=body, headers=[auth, (b"content-type", b"application/json")]
        )
        response = await post.get_response(timeout=10)
        assert response["status"] == 201, response["body"]
        assert (b"content-type", b"application/json") in response["headers"]
        # The query string reaches the view.
        listing = HttpCommunicator(router, "GET", "/api/jobs/?user=alice&limit=1", headers=[auth])
        response = await listing.get_response(timeout=10)
        assert json.loads(response["body"])["count"] == 1
        refused = HttpCommunicator(router, "GET", "/api/whoami/")
        assert (await refused.get_response(timeout=10))["status"] == 401

    async_to_sync(scenario)()
    assert Job.objects.filter(user="alice").count() == 1


def test_console_notes_of_a_burst_are_merged(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

    async def scenario() -> list[dict]:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(publish.CONSOLE_GROUP, channel)
        publish.bind_server_loop(asyncio.get_running_loop())
        try:
            # Two services commit from worker threads within one window.
            for topics in ({"jobs"}, {"nodes", "jobs"}):
                worker = threading.Thread(target=publish.console_note_now, args=(topics,))
                worker.start()
                worker.join()
            notes = [await asyncio.wait_for(layer.receive(channel), 2)]
            with contextlib.suppress(TimeoutError):
                notes.append(await asyncio.wait_for(layer.receive(channel), publish.CONSOLE_WINDOW * 4))
            return notes
        finally:
            publish._server_loop = None

    # Its own loop on its own thread, as the server's (the main thread may hold Playwright's).
    notes: list[list[dict]] = []
    runner = threading.Thread(target=lambda: notes.append(asyncio.run(scenario())))
    runner.start()
    runner.join()
    assert notes == [[{"type": "console.changed", "topics": ["jobs", "nodes"]}]]


def test_insert_values_refuses_a_field_the_model_lacks(db):
    with pytest.raises(TypeError, match="Event has no field bogus"):
        rows.insert_values(Event, [{"time": timezone.now(), "bogus": 1}])
    assert not Event.objects.exists()


def test_passes_do_not_read_held_jobs(demo, users):
    held = job_submit(user=users["alice"], spec={"wrap": "true", "hold": True}).job_ids[0]
    free = job_submit(user=users["alice"], spec={"wrap": "true", "begin": "now+1hour"}).job_ids[0]
    snapshot, _nodes = build_snapshot(timezone.now())
    assert [j.job_id for j in snapshot.pending] == [free]
    schedule_pass()
    job = Job.objects.get(pk=held)
    assert (job.state, job.reason, job.priority) == ("PENDING", "JobHeldUser", 0)


def _max_job_count(value: int) -> None:
    cfg = ClusterConfig.for_update()
    cfg.options = {**cfg.options, "MaxJobCount": value}
    cfg.save(update_fields=["options"])


def test_max_job_count_refuses_and_stores_nothing(demo, users):
    _max_job_count(3)
    job_submit(user=users["alice"], spec={"wrap": "true", "array": "1-2"})
    job_submit(user=users["alice"], spec={"wrap": "true"})
    with pytest.raises(ServiceError, match="Slurm temporarily unable to accept job"):
        job_submit(user=users["alice"], spec={"wrap": "true"})
    assert Job.objects.count() == 3


def test_max_job_count_sees_jobs_that_ended_and_jobs_stored_elsewhere(demo, users):
    _max_job_count(2)
    first = job_submit(user=users["alice"], spec={"wrap": "true"}).job_ids[0]
    job_submit(user=users["alice"], spec={"wrap": "true"})
    job_cancel(actor=users["alice"], job_id=first)
    # The estimate says two are active; the count before refusing finds one.
    job_submit(user=users["alice"], spec={"wrap": "true"})
    # Another process's jobs: a new count is due after a second at most.
    Job.objects.filter(pk=first).update(state="PENDING")
    jobs._active = (jobs._active[0], jobs._active[1] - jobs._ACTIVE_TTL - 1, 0)
    with pytest.raises(ServiceError, match="temporarily unable"):
        job_submit(user=users["alice"], spec={"wrap": "true"})


def test_select_reads_what_values_list_reads(demo, users):
    spec = {"wrap": "true", "environment": {"X": "1"}, "begin": "now+1hour", "hold": True}
    ids = job_submit(user=users["alice"], spec={**spec, "array": "1-3"}).job_ids
    fields = ("id", "submit_time", "begin_time", "environment", "requeue", "hold", "end_time")
    expected = list(Job.objects.filter(pk__in=ids[:2]).order_by("-id").values_list(*fields))
    assert rows.select(Job, fields, {"pk": ids[:2]}, order_by=("-id",)) == expected
    assert rows.select(Job, ("id",), {"pk": ids, "end_time": None}, limit=1) == [(ids[0],)]
    assert rows.select(Job, ("id",), {"pk": []}) == []


def test_load_reads_only_what_it_names_and_saves_only_that(demo, users):
    job_id = job_submit(user=users["alice"], spec={"wrap": "true", "name": "keep"}).job_ids[0]
    (job,) = rows.load(Job, ("state", "restart_count"), {"pk": job_id})
    assert job.get_deferred_fields() >= {"name", "script"} and job.state == "PENDING"
    Job.objects.filter(pk=job_id).update(name="changed elsewhere")
    job.restart_count = 5
    job.save()
    stored = Job.objects.get(pk=job_id)
    assert (stored.restart_count, stored.name) == (5, "changed elsewhere")
    (whole,) = rows.load(Job, None, {"pk": job_id})
    assert not whole.get_deferred_fields() and whole.script == stored.script


def test_update_rows_and_update_where_write_as_the_orm_would(demo, users):
    ids = job_submit(user=users["alice"], spec={"wrap": "true", "array": "1-3"}).job_ids
    now = timezone.now()
    jobs_ = rows.load(Job, ("alloc", "end_time"), {"pk": ids[:2]})
    for job in jobs_:
        job.alloc, job.end_time = {"node01": [1, 100]}, now
    assert rows.update_rows(jobs_, ["alloc", "end_time"]) == 2
    assert rows.update_where(Job, {"launched": True}, {"pk": ids, "end_time": None}) == 1
    stored = {j.pk: j for j in Job.objects.filter(pk__in=ids)}
    assert [stored[i].alloc for i in ids] == [{"node01": [1, 100]}, {"node01": [1, 100]}, {}]
    assert stored[ids[0]].end_time == now and [stored[i].launched for i in ids] == [False, False, True]
