"""Hypothesis over POST /api/jobs/ and the job endpoints (issue 10's fuzz acceptance).

Generated bodies mix valid sbatch requests with wrong types, huge numbers, any Unicode
(lone surrogates included), nested structures, unknown keys and huge hostlists.  Every
answer is 2xx or 4xx; a 4xx changes nothing (same job count, same configuration in force);
the process's memory stays bounded.
"""

from __future__ import annotations

import json
from collections import Counter

import psutil
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cluster.models import ClusterConfig, Event, Job

pytestmark = pytest.mark.django_db

MB = 1024 * 1024
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same examples in CI as here
    database=None,  # no .hypothesis directory in the checkout
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Any code point, lone surrogates and NUL included (Hypothesis leaves surrogates out by default).
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
huge_ints = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([2**31, 2**63, 10**30, -1, 0])
)
finite = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.one_of(st.none(), st.booleans(), huge_ints, finite, any_text)
nested = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)
hostlists = st.one_of(
    st.sampled_from(
        ["node01", "node[01-04]", "node[01-02],cloud01", "node[1-2000000]", "a[1-9999]b[1-9999]"]
    ),
    st.builds(lambda n: f"node[1-{n}]", st.integers(min_value=1, max_value=10**12)),
    any_text,
)

VALID = {
    "name": st.sampled_from(["job", "a b", "é💡"]),
    "partition": st.sampled_from(["debug", "batch", "debug,batch", "nosuch"]),
    "nodes": st.one_of(st.integers(min_value=1, max_value=40), st.sampled_from(["1", "2-4", "1-100"])),
    "ntasks": st.one_of(st.integers(min_value=1, max_value=64), st.sampled_from(["1", "8"])),
    "cpus_per_task": st.sampled_from([1, "2", 4]),
    "mem": st.sampled_from(["100M", "1G", "2000", "0"]),
    "time": st.sampled_from(["10", "1:00:00", "-1", "1-00:00:00", "UNLIMITED", "0"]),
    "output": st.sampled_from(["/tmp/out-%j", "out.txt"]),
    "error": st.sampled_from(["/tmp/err-%j"]),
    "work_dir": st.sampled_from(["/tmp", "/"]),
    "nodelist": hostlists,
    "exclude": hostlists,
    "hold": st.booleans(),
    "requeue": st.booleans(),
    "gres": st.sampled_from(["gpu:1", "gpu:0", "gpu:-1", "gpu:tesla:2"]),
    "begin": st.sampled_from(["now+1hour", "tomorrow", "2031-01-01T10:00", "now+99999999999weeks"]),
    "array": st.sampled_from(["0-3", "1,3,5", "0-9%2", "0-99999999"]),
    "environment": st.dictionaries(any_text, any_text, max_size=3),
    "argv": st.lists(any_text, max_size=3),
    "licenses": st.sampled_from(["", "nosuch:1"]),
}
FIELDS = sorted(VALID)


def _value(field: str) -> st.SearchStrategy:
    return st.one_of(VALID[field], VALID[field], scalars, nested, huge_ints)


def _body() -> st.SearchStrategy:
    known = st.fixed_dictionaries({}, optional={f: _value(f) for f in FIELDS})
    unknown = st.dictionaries(any_text, scalars, max_size=2)
    script = st.sampled_from([{"wrap": "true"}, {"script": "#!/bin/sh\ntrue\n"}, {}])
    return st.builds(lambda s, k, u: {**u, **s, **k}, script, known, unknown | st.just({}))


def _state() -> tuple[int, int, int]:
    return Job.objects.count(), Event.objects.count(), ClusterConfig.current().version


def _rss() -> int:
    return psutil.Process().memory_info().rss


def _check(response, before, seen=None) -> None:
    event(f"status {response.status_code}")
    if seen is not None:
        seen[response.status_code] += 1
    assert 200 <= response.status_code < 500, (response.status_code, response.content[:300])
    if response.status_code >= 400:
        assert _state() == before, response.content[:300]
        assert "error" in response.json()


def _send(client, method: str, path: str, body) -> object:
    # json.dumps writes a lone surrogate as "\ud800", which the test client's encoder cannot.
    data = json.dumps(body, allow_nan=False) if not isinstance(body, str) else body
    return getattr(client, method)(path, data, content_type="application/json")


@pytest.fixture
def alice(demo, api):
    client = api("alice")
    _send(client, "post", "/api/jobs/", {"wrap": "true"})  # warm: the first request loads everything
    return client


def test_fuzz_submission(alice):
    start = _rss()
    seen: Counter[int] = Counter()

    @FUZZ
    @given(body=st.one_of(_body(), _body(), nested))
    def submit(body):
        before = _state()
        _check(_send(alice, "post", "/api/jobs/", body), before, seen)

    submit()
    print("POST /api/jobs/ answers:", dict(seen))
    assert seen[201] and seen[400]  # the mix reaches both outcomes
    assert _rss() - start < 50 * MB


def test_fuzz_job_endpoints(alice, api):
    job_id = _send(alice, "post", "/api/jobs/", {"wrap": "true", "hold": True}).json()["job_id"]
    admin = api("admin")
    start = _rss()
    seen: Counter[int] = Counter()
    actions = ["cancel", "hold", "release", "requeue", "suspend", "resume"]

    @FUZZ
    @given(
        who=st.sampled_from(["alice", "admin"]),
        method=st.sampled_from(["post", "patch", "get"]),
        action=st.sampled_from([*actions, "", "cancel-bulk"]),
        body=st.one_of(
            st.fixed_dictionaries(
                {}, optional={"signal": _value("name") | st.sampled_from(["KILL", "USR1"])}
            ),
            st.fixed_dictionaries(
                {},
                optional={
                    "name": _value("name"),
                    "time_limit": _value("time"),
                    "partition": _value("partition"),
                    "job_ids": st.lists(huge_ints | any_text, max_size=3) | scalars,
                    "user": scalars,
                    "state": scalars,
                },
            ),
            nested,
        ),
        query=st.dictionaries(
            st.sampled_from(["job_id", "array_job_id", "state", "user", "offset", "limit", "name"]),
            any_text.filter(lambda t: "\x00" not in t) | huge_ints.map(str),
            max_size=3,
        ),
    )
    def call(who, method, action, body, query):
        client = alice if who == "alice" else admin
        before = _state()
        if method == "get":
            response = client.get("/api/jobs/", query)
        elif action == "cancel-bulk":
            response = _send(client, "post", "/api/jobs/cancel/", body)
        elif action and method == "post":
            response = _send(client, "post", f"/api/jobs/{job_id}/{action}/", body)
        else:
            response = _send(client, "patch", f"/api/jobs/{job_id}/", body)
        _check(response, before, seen)

    call()
    print("job endpoints answers:", dict(seen))
    assert _rss() - start < 50 * MB


def test_hostile_inputs_leave_memory_bounded(alice):
    """The attack review's inputs: each used to take seconds and hundreds of megabytes."""
    hostile = [
        {"wrap": "true", "nodelist": "node[1-99999999]"},
        {"wrap": "true", "exclude": "a[1-9999]b[1-9999]"},
        {"wrap": "true", "array": "0-1000000"},
        {"wrap": "true", "nodes": "9" * 30, "ntasks": 10**20},
        {"wrap": "true", "environment": {f"K{i}": "v" * 100 for i in range(20_000)}},
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' + "[" * 2_000_000 + "]" * 2_000_000 + "}",  # 4 MB: over the body limit
    ]
    start = _rss()
    for body in hostile:
        response = _send(alice, "post", "/api/jobs/", body)
        assert response.status_code in (400, 413), response.content[:300]
    response = alice.get("/api/nodes/", {"name": "node[1-99999999]"})
    assert response.status_code == 400
    assert _rss() - start < 50 * MB
