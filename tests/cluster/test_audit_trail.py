"""The audit trail cannot be edited (issue 10, item 6): events, auditlog's and the admin's
log entries, and the configuration in force are shown by the admin, never added, changed
or deleted, superusers included; configuration edits that would skip validation are gone."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry
from django.contrib.admin.models import ADDITION
from django.contrib.admin.models import LogEntry as AdminLogEntry
from django.contrib.contenttypes.models import ContentType
from django.urls import get_resolver
from django.utils import timezone

from cluster.models import ClusterConfig, Event, Job, Node, Partition
from cluster.services.nodes import node_update
from hres.models import LayerUpdate, ResourcesFile
from limits.models import Tres, Usage
from power.models import PowerRun


@pytest.fixture
def admin_client(client, users, demo):
    client.force_login(users["admin"])  # a superuser: every check below holds for them too
    return client


def url(obj, view: str) -> str:
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{obj.pk}/{view}/"


def test_events_cannot_be_added_changed_or_deleted(admin_client):
    event = Event.objects.filter(kind=Event.Kind.CONFIG).first()
    assert event is not None
    count = Event.objects.count()
    assert admin_client.get(url(event, "change")).status_code == 200  # shown
    assert admin_client.post(url(event, "change"), {"reason": "forged"}).status_code == 403
    assert admin_client.post(url(event, "delete"), {"post": "yes"}).status_code == 403
    assert admin_client.get("/admin/cluster/event/add/").status_code == 403
    listing = admin_client.get("/admin/cluster/event/")
    assert b"delete_selected" not in listing.content
    admin_client.post("/admin/cluster/event/", {"action": "delete_selected", "_selected_action": [event.pk]})
    assert Event.objects.count() == count
    assert Event.objects.get(pk=event.pk).reason == event.reason


def test_auditlog_entries_cannot_be_changed_or_deleted(admin_client, users):
    node_update(actor=users["admin"], nodes="node01", weight=7)
    entry = LogEntry.objects.get_for_object(Node.objects.get(name="node01")).first()
    assert entry is not None and entry.actor == users["admin"]
    assert admin_client.get(url(entry, "change")).status_code == 200
    assert admin_client.post(url(entry, "change"), {"changes": "{}"}).status_code == 403
    assert admin_client.post(url(entry, "delete"), {"post": "yes"}).status_code == 403
    admin_client.post(
        "/admin/auditlog/logentry/", {"action": "delete_selected", "_selected_action": [entry.pk]}
    )
    assert LogEntry.objects.filter(pk=entry.pk).exists()


def test_the_admins_own_history_cannot_be_deleted_nor_cascade_with_its_user(admin_client, users):
    entry = AdminLogEntry.objects.log_actions(
        user_id=users["bob"].pk,
        queryset=[Node.objects.get(name="node02")],
        action_flag=ADDITION,
        single_object=True,
    )
    assert admin_client.post(url(entry, "delete"), {"post": "yes"}).status_code == 403
    # Deleting bob would delete his entries with him (on_delete=CASCADE): refused.
    answer = admin_client.post(url(users["bob"], "delete"), {"post": "yes"})
    assert answer.status_code == 403
    assert AdminLogEntry.objects.filter(pk=entry.pk).exists()


def test_the_configuration_in_force_is_shown_not_edited(admin_client):
    cfg = ClusterConfig.current()
    before = (dict(cfg.options), cfg.version)
    page = admin_client.get(url(cfg, "change"))
    assert page.status_code == 200 and b"MaxJobCount" in page.content
    assert b'name="options"' not in page.content  # no JSON editor
    answer = admin_client.post(url(cfg, "change"), {"options": '{"MaxJobCount": "abc"}', "version": "99"})
    assert answer.status_code == 403
    fresh = ClusterConfig.objects.get(pk=cfg.pk)
    assert (fresh.options, fresh.version) == before
    assert admin_client.post(url(cfg, "delete"), {"post": "yes"}).status_code == 403
    assert admin_client.get("/admin/cluster/clusterconfig/add/").status_code == 403


def test_partitions_are_read_only_in_the_admin(admin_client):
    part = Partition.objects.get(name="debug")
    answer = admin_client.post(
        url(part, "change"), {"name": "debug", "nodes": "node[01-99]", "max_time": "abc"}
    )
    assert answer.status_code == 403
    assert Partition.objects.get(name="debug").nodes == part.nodes
    assert admin_client.post(url(part, "delete"), {"post": "yes"}).status_code == 403


def test_a_node_edit_goes_through_node_update_and_nothing_else_is_editable(admin_client, users):
    node = Node.objects.get(name="node03")
    page = admin_client.get(url(node, "change")).content.decode()
    assert 'name="weight"' in page and 'name="cpus"' not in page and 'name="real_memory"' not in page
    answer = admin_client.post(
        url(node, "change"), {"weight": "9", "features": node.features, "reason": "", "cpus": "9999"}
    )
    assert answer.status_code == 302
    fresh = Node.objects.get(name="node03")
    assert (fresh.weight, fresh.cpus) == (9, node.cpus)
    history = [e.changes_dict.get("weight") for e in LogEntry.objects.get_for_object(fresh)]
    assert [str(node.weight), "9"] in history  # audited, with the actor (below)
    assert LogEntry.objects.get_for_object(fresh).first().actor == users["admin"]
    assert admin_client.post(url(node, "delete"), {"post": "yes"}).status_code == 403
    assert Node.objects.filter(name="node03").exists()


def test_a_refused_node_edit_shows_on_the_form_and_changes_nothing(admin_client):
    node = Node.objects.get(name="node04")
    answer = admin_client.post(
        url(node, "change"), {"weight": "1", "features": "ok,bad\x01feature", "reason": ""}
    )
    # The form again, with the service's refusal (a control character: Django's own
    # field checks let it through).
    assert answer.status_code == 200 and "control character" in answer.content.decode()
    fresh = Node.objects.get(name="node04")
    assert (fresh.features, fresh.weight) == (node.features, node.weight)


def test_jobs_cannot_be_deleted_in_the_admin(admin_client, users):
    job = Job.objects.create(id=424242, user="alice", partition="debug", submit_time=timezone.now())
    assert admin_client.post(url(job, "delete"), {"post": "yes"}).status_code == 403
    assert Job.objects.filter(pk=job.pk).exists()


def test_other_records_are_read_only(admin_client):
    now = timezone.now()
    rows = [
        LayerUpdate.objects.create(time=now, resource="x", changes={"count": 1}),
        ResourcesFile.current(),
        Tres.objects.get_or_create(name="cpu")[0],
        Usage.objects.create(key="a|b", raw_usage=5.0),
        PowerRun.objects.create(kind=PowerRun.Kind.RESUME, program="p", nodes="cloud01", started=now),
    ]
    for row in rows:
        model = type(row)
        assert admin_client.get(url(row, "change")).status_code == 200, model
        assert admin_client.post(url(row, "delete"), {"post": "yes"}).status_code == 403, model
        assert model.objects.filter(pk=row.pk).exists(), model
    for path in ("hres/resourcesfile", "limits/tres", "limits/usage", "power/powerrun", "power/powerstate"):
        assert admin_client.get(f"/admin/{path}/add/").status_code == 403, path
    assert admin_client.post(url(rows[3], "change"), {"raw_usage": "0"}).status_code == 403


def test_no_url_outside_the_admin_writes_events_or_log_entries(admin_client):
    """Walk every route: none but the admin's names events or log entries, and the
    console's event list only reads."""

    def routes(patterns, prefix=""):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                yield from routes(p.url_patterns, prefix + str(p.pattern))
            else:
                yield prefix + str(p.pattern)

    words = ("event", "log", "audit")
    named = [r for r in routes(get_resolver().url_patterns) if any(w in r.lower() for w in words)]
    outside_admin = sorted(r for r in named if not r.startswith("admin/"))
    # The console's lists of them (cluster/lists), read only.
    lists = ["audit/", "audit/_table", "audit/export", "events/", "events/_table", "events/export"]
    # login/ and logout/ are the console's session views ("log" in their names), not records.
    assert outside_admin == sorted(["_events", "login/", "logout/", *lists]), outside_admin
    count = Event.objects.count()
    for route in [r for r in outside_admin if r not in ("login/", "logout/")]:
        assert admin_client.post(f"/{route}").status_code == 405, route
        assert admin_client.delete(f"/{route}").status_code == 405, route
    assert Event.objects.count() == count
    assert ContentType.objects.get_for_model(Event)  # the model the walk is about exists
