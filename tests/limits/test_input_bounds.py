"""The limits endpoints refuse out-of-range numbers, bad names and non-boolean flags with a
400 naming the option, check the permission before the body, and change nothing when they
refuse (issue 10, "Bounded, validated input everywhere")."""

from __future__ import annotations

import pytest

from limits.core.options import COUNT_MAX, OptionError, apply_option
from limits.models import QOS, Account, Association, LimitsState, LimitsUser

pytestmark = pytest.mark.django_db

BIG = "9" * 30


def _state():
    return (
        list(QOS.objects.order_by("name").values()),
        list(Account.objects.order_by("name").values()),
        list(Association.objects.order_by("pk").values()),
        list(LimitsUser.objects.order_by("name").values()),
        LimitsState.objects.first().version if LimitsState.objects.exists() else None,
    )


@pytest.fixture
def admin(demo, api):
    c = api("admin")
    body = {"names": ["science"], "options": ["GrpTRESMins=cpu=10"]}
    assert c.post("/api/limits/add/account/", body, format="json").status_code == 200
    return c


@pytest.mark.parametrize(
    ("path", "body", "field", "words"),
    [
        (
            "modify/account",
            {"where": ["name=science"], "options": [f"GrpTRES=cpu={BIG}"]},
            "GrpTRES",
            "at most",
        ),
        (
            "modify/account",
            {"where": ["name=science"], "options": [f"GrpTRESMins=mem={BIG}G"]},
            "GrpTRESMins",
            "",
        ),
        ("modify/account", {"where": ["name=science"], "options": [f"MaxJobs={BIG}"]}, "MaxJobs", "at most"),
        ("modify/account", {"where": ["name=science"], "options": ["MaxJobs=2147483648"]}, "MaxJobs", ""),
        ("modify/account", {"where": ["name=science"], "options": ["MaxJobs=٣"]}, "MaxJobs", "not a number"),
        ("modify/account", {"where": ["name=science"], "options": [f"Fairshare={BIG}"]}, "Fairshare", ""),
        ("modify/account", {"where": ["name=science"], "options": [f"MaxWall={BIG}"]}, "MaxWall", ""),
        ("modify/account", {"where": ["name=science"], "options": [f"RawUsage={BIG}"]}, "RawUsage", ""),
        ("modify/qos", {"where": ["name=normal"], "options": [f"Priority={BIG}"]}, "Priority", "at most"),
        ("modify/qos", {"where": ["name=normal"], "options": [f"GraceTime={BIG}"]}, "GraceTime", ""),
        ("modify/qos", {"where": ["name=normal"], "options": ["UsageFactor=nan"]}, "UsageFactor", "finite"),
        ("modify/qos", {"where": ["name=normal"], "options": ["LimitFactor=inf"]}, "LimitFactor", "finite"),
        ("add/qos", {"names": ["q\x007"]}, "names", "control character"),
        ("add/qos", {"names": ["q" * 65]}, "names", "longer than 64"),
        ("add/account", {"names": ["a b"]}, "names", "blank"),
        ("add/account", {"names": ["a2"], "options": ["Description=" + "d" * 257]}, "description", ""),
        ("add/account", {"names": ["a3"], "options": ["Organization=x\x1b[31m"]}, "options", "control"),
        ("add/account", {"names": ["a4"], "commit": "maybe"}, "commit", "true or false"),
        ("add/account", {"names": ["a5"], "comit": False}, "comit", "Unknown field"),
        ("delete/qos", {"where": ["name=x\x00"]}, "where", "control character"),
    ],
)
def test_refused_with_the_option_named_and_nothing_changed(admin, path, body, field, words):
    before = _state()
    response = admin.post(f"/api/limits/{path}/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json().get("field") == field
    assert words in response.json()["error"]
    assert _state() == before


def test_admin_level_takes_slurms_words(admin):
    bad = admin.post(
        "/api/limits/add/user/",
        {"names": ["u1"], "options": ["Account=science", "AdminLevel=god"]},
        format="json",
    )
    assert bad.status_code == 400 and "Invalid AdminLevel" in bad.json()["error"]
    ok = admin.post(
        "/api/limits/add/user/",
        {"names": ["u1"], "options": ["Account=science", "AdminLevel=admin"]},
        format="json",
    )
    assert ok.status_code == 200
    assert LimitsUser.objects.get(name="u1").admin_level == "Administrator"


def test_a_non_staff_user_gets_403_whatever_the_body(admin, api):
    alice = api("alice")
    for path, body in (
        ("add/qos", ["not", "an", "object"]),
        ("add/qos", {"names": 5}),
        ("modify/account", {"where": ["name=science"], "options": [f"GrpTRES=cpu={BIG}"]}),
        ("delete/account", {"where": "name=science", "commit": "maybe"}),
        ("load", {"text": 5}),
    ):
        assert alice.post(f"/api/limits/{path}/", body, format="json").status_code == 403


def test_a_body_that_is_not_an_object_is_a_400(admin):
    for path in ("add/account", "modify/account", "delete/account", "load"):
        response = admin.post(f"/api/limits/{path}/", ["science"], format="json")
        assert response.status_code == 400 and "JSON object" in response.json()["error"]


def test_show_refuses_a_control_character_in_a_condition(admin):
    response = admin.get("/api/limits/show/qos/", {"where": "name=\x00"})
    assert response.status_code == 400 and response.json()["field"] == "where"


def test_counts_stop_at_the_column_range():
    assert apply_option("MaxJobs", "=", "count", str(COUNT_MAX), None) == COUNT_MAX
    with pytest.raises(OptionError, match="at most"):
        apply_option("MaxJobs", "=", "count", str(COUNT_MAX + 1), None)
    assert apply_option("GrpTRES", "=", "tres", "cpu=9223372036854775807", "") == "cpu=9223372036854775807"
    with pytest.raises(OptionError, match="at most"):
        apply_option("GrpTRES", "=", "tres", "mem=9000000000000000P", "")
