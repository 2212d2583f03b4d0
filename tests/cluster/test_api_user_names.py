"""``GET /api/users/``: which names are users, the check of ``squeue/scancel/sacct -u``."""

from __future__ import annotations


def test_the_known_names_in_their_order(api, users):
    answer = api("alice").get("/api/users/", {"name": "nosuch,bob,alice,bob"})
    assert answer.status_code == 200
    assert answer.json() == {"users": ["bob", "alice", "bob"]}


def test_no_name_no_user_and_a_login_needed(api, users):
    assert api("alice").get("/api/users/").json() == {"users": []}
    assert api(None).get("/api/users/", {"name": "alice"}).status_code in (401, 403)
