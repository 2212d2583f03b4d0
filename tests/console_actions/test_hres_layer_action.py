"""The layer page's update as a console action (#15 point 4): confirmed, staff only, Slurm's
refusal in its words, a success message, audited with the request's correlation id."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry

from hres import services
from hres.models import LayerUpdate
from tests.hres.test_services import hres_conf  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db
URL = "/hres/power/rack1/update/"


def post(client, **data):
    return client.post(URL, {"confirmed": "1", **data}, HTTP_X_REQUEST_ID="hres-req")


def rack1():
    return next(e for e in services.license_entries("power") if e["layer_name"] == "rack1")


def test_the_form_posts_to_the_action_with_a_confirmation(hres_conf, client, users):  # noqa: F811
    client.force_login(users["admin"])
    page = client.get("/hres/power/rack1/").content.decode()
    assert f'hx-post="{URL}"' in page and "hx-confirm=" in page
    unconfirmed = client.post(URL, {"count": "45000"})
    assert unconfirmed.status_code == 200 and "Update layer rack1 of power?" in unconfirmed.content.decode()
    assert rack1()["conf_total"] != 45000


def test_staff_updates_with_a_message_and_an_audit_entry(hres_conf, client, users):  # noqa: F811
    client.force_login(users["admin"])
    answer = post(client, count="45000", disable_layer="true", reason="new PDU")
    assert answer.status_code == 303 and answer["Location"] == "/hres/power/rack1/"
    assert (rack1()["conf_total"], rack1()["disable_layer"]) == (45000, True)
    assert "Layer rack1 of power updated." in client.get("/hres/power/rack1/").content.decode()
    update = LayerUpdate.objects.get()
    entry = LogEntry.objects.get_for_object(update).get()
    assert (entry.cid, entry.actor, entry.additional_data) == (
        "hres-req",
        users["admin"],
        {"action": "hres_update", "reason": "new PDU"},
    )
    assert entry.changes_dict["conf_total"][1] == "45000"


def test_below_base_usage_is_400_with_the_services_words(hres_conf, client, users):  # noqa: F811
    client.force_login(users["admin"])
    answer = post(client, count="4000")
    assert answer.status_code == 400 and "BaseUsage" in answer.content.decode()
    assert not LayerUpdate.objects.exists()


def test_a_user_is_refused_403(hres_conf, client, users):  # noqa: F811
    client.force_login(users["alice"])
    assert post(client, count="45000").status_code == 403
    assert not LayerUpdate.objects.exists()
