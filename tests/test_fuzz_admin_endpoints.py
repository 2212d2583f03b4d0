"""Generated bodies for the node, reservation, limits, HRES and power endpoints, sent as
staff and as a normal user (issue 10, acceptance "A fuzz test with hypothesis").

Every answer is 2xx or 4xx; after a 4xx nothing has changed: the job count, the node rows,
the configuration in force (``ClusterConfig.current().version``), the reservations and the
limits rows are what they were; and the test process's memory (RSS) grows by less than
50 MB over the whole run, huge hostlists and numbers included.
"""

from __future__ import annotations

import json

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster.models import ClusterConfig, Job, Node, Reservation
from limits.models import QOS, Account, Association, LimitsState, LimitsUser

pytestmark = pytest.mark.django_db

RSS_GROWTH_MAX = 50 * 2**20
FUZZ = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)

# Values that reach the parsers' edges: huge and negative numbers, huge hostlists, control
# characters, lone surrogates, deep nesting.
EDGES = st.sampled_from(
    [
        10**30,
        -(10**30),
        2**31,
        2**63,
        -1,
        0,
        1.5,
        float("inf"),
        "",
        " ",
        "abc",
        "٣",
        "9" * 40,
        "-1",
        "node[1-2000000]",
        "node[1-99999999]",
        "node[01-04]",
        "node01",
        "cloud01",
        "node[1-",
        "ALL",
        "a\x00b",
        "x\x1b[31m",
        "\ud800",
        "now+99999999999days",
        "9999-12-31T23:59:59",
        "99999999999:00:00",
        "[" * 3000,
        "x" * 5000,
        "alice",
        "-alice",
        "maint,ignore_jobs",
        "natural(low1):" + "9" * 30,
        "true",
        "perhaps",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    EDGES,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
USERS = st.sampled_from(["admin", "alice"])
WEIGHTS = VALUES


def _body(keys, values=VALUES, **special):
    fields = {k: special.get(k, values) for k in keys}
    return st.fixed_dictionaries({}, optional=fields)


def _bodies(keys, base=None, **special):
    """Objects with the endpoint's fields (and a stray one); a valid ``base`` with one field
    replaced (so the value reaches the code past the other checks); now and then no object."""
    one_off = st.sampled_from(list(keys)).flatmap(
        lambda key: special.get(key, st.one_of(EDGES, VALUES)).map(lambda value: {**(base or {}), key: value})
    )
    return st.one_of(_body([*keys, "partiton"], **special), _body(keys, values=EDGES), one_off, VALUES)


def _state():
    return (
        Job.objects.count(),
        list(Node.objects.order_by("name").values()),
        ClusterConfig.current().version,
        list(Reservation.objects.order_by("name").values()),
        list(QOS.objects.order_by("name").values()),
        list(Account.objects.order_by("name").values()),
        list(Association.objects.order_by("pk").values()),
        list(LimitsUser.objects.order_by("name").values()),
        list(LimitsState.objects.values_list("version", flat=True)),
    )


class Sender:
    """Sends one request and checks the rules; RSS is measured around the whole test."""

    def __init__(self, api):
        self.clients = {name: api(name) for name in ("admin", "alice")}
        self.process = psutil.Process()
        self.rss = self.process.memory_info().rss
        self.seen: set[int] = set()

    def send(self, who: str, method: str, url: str, body=None) -> int:
        before = _state()
        client = self.clients[who]
        # Encoded here, so lone surrogates (escaped) and Infinity reach the server's parser.
        text = "" if method == "get" else json.dumps(body, ensure_ascii=True)
        try:
            response = client.generic(method.upper(), url, text, content_type="application/json")
        except Exception as exc:  # the test client re-raises what became a 500
            pytest.fail(f"{who} {method.upper()} {url} {body!r:.300}: {type(exc).__name__}: {exc}")
        code = response.status_code
        assert 200 <= code < 500, (
            f"{who} {method.upper()} {url} {body!r:.300}: {code} {response.content[:300]!r}"
        )
        if code >= 400:
            assert _state() == before, f"{who} {method.upper()} {url} {body!r:.300}: {code} changed the state"
        self.seen.add(code)
        return code

    def check_memory(self) -> None:
        grown = self.process.memory_info().rss - self.rss
        assert grown < RSS_GROWTH_MAX, f"RSS grew by {grown / 2**20:.1f} MB"


@pytest.fixture
def sender(demo, api):
    return Sender(api)


NODE_UPDATE = ("nodes", "state", "reason", "weight", "features", "active_features", "suspend_time")
NODE_UPDATE += ("instance_id", "instance_type", "extra")
NODE_CREATE = ("NodeName", "State", "CPUs", "RealMemory", "Feature", "Weight", "HRES", "SuspendTime")


def test_node_endpoints(sender):
    @FUZZ
    @given(
        who=USERS,
        update=_body([*NODE_UPDATE, "partiton"], weight=WEIGHTS),
        create=_bodies(NODE_CREATE, {"NodeName": "node50"}),
        delete=st.fixed_dictionaries({}, optional={"nodes": VALUES}),
    )
    def run(who, update, create, delete):
        sender.send(who, "post", "/api/nodes/update/", update)
        sender.send(who, "post", "/api/nodes/create/", create)
        sender.send(who, "post", "/api/nodes/delete/", delete)

    run()
    sender.check_memory()
    assert sender.seen & {400, 403}


RESERVATION = ("name", "start_time", "end_time", "duration", "nodes", "users", "accounts", "partition")
RESERVATION += ("flags", "licenses")


def test_reservation_endpoints(sender):
    names = st.sampled_from(["r1", "resv", "x" * 70, "%00", "alice_1"])

    times = st.one_of(
        st.sampled_from(
            ["now+99999999999days", "9999-12-31T23:59:59", "99999999999:00:00", "9" * 30, "uts9" * 9]
        ),
        st.sampled_from(["now", "now+1hour", "60", "2:00:00", "UNLIMITED", "tomorrow"]),
        VALUES,
    )
    fields = {"start_time": times, "end_time": times, "duration": times}

    @FUZZ
    @given(
        who=USERS,
        create=_bodies(RESERVATION, {"users": "alice", "nodes": "node01"}, **fields),
        update=_bodies(RESERVATION, {}, **fields),
        name=names,
    )
    def run(who, create, update, name):
        sender.send(who, "post", "/api/reservations/", create)
        sender.send(who, "patch", f"/api/reservations/{name}/", update)
        if update is None:
            sender.send(who, "delete", f"/api/reservations/{name}/")

    run()
    sender.check_memory()


OPTIONS = st.lists(
    st.one_of(
        st.builds(
            "{}={}".format,
            st.sampled_from(
                [
                    "GrpTRES",
                    "GrpTRESMins",
                    "MaxJobs",
                    "MaxWall",
                    "Priority",
                    "Fairshare",
                    "RawUsage",
                    "UsageFactor",
                    "GraceTime",
                    "LimitFactor",
                    "QOS+",
                    "Flags",
                    "Description",
                    "Parent",
                    "Account",
                    "AdminLevel",
                ]
            ),
            st.one_of(
                EDGES.map(str), st.text(max_size=12), st.sampled_from(["cpu=" + "9" * 30, "cpu=-1", "mem=9P"])
            ),
        ),
        st.text(max_size=20),
    ),
    max_size=4,
)


def test_limits_endpoints(sender):
    entities = st.sampled_from(["account", "user", "qos", "cluster", "association", "bogus"])
    words = st.lists(
        st.one_of(
            st.sampled_from(["science", "normal", "root", "alice"]), st.text(max_size=10), EDGES.map(str)
        ),
        max_size=3,
    )
    where = st.lists(
        st.builds("{}={}".format, st.sampled_from(["name", "account", "user", "x"]), st.text(max_size=10)),
        max_size=2,
    )
    commit = st.one_of(st.booleans(), VALUES)

    @FUZZ
    @given(
        who=USERS,
        entity=entities,
        add=st.one_of(
            _body(["names", "options", "commit"], names=words, options=OPTIONS, commit=commit), VALUES
        ),
        modify=_body(["where", "options", "commit"], where=where, options=OPTIONS, commit=commit),
        delete=_body(["where", "commit"], where=where, commit=commit),
        load=_body(["text", "commit"], text=st.one_of(st.text(max_size=60), VALUES)),
    )
    def run(who, entity, add, modify, delete, load):  # noqa: PLR0917 - hypothesis passes them
        sender.send(who, "post", f"/api/limits/add/{entity}/", add)
        sender.send(who, "post", f"/api/limits/modify/{entity}/", modify)
        sender.send(who, "post", f"/api/limits/delete/{entity}/", delete)
        sender.send(who, "post", "/api/limits/load/", load)
        if isinstance(modify.get("where"), list):
            sender.send(
                who, "get", f"/api/limits/show/{entity}/?" + "&".join(f"where={w}" for w in modify["where"])
            )

    run()
    sender.check_memory()


HRES = ("hres_name", "layer_name", "nodes", "count", "base", "disable_hres", "disable_layer")


def test_hres_and_power_endpoints(sender):
    hres_names = st.sampled_from(["natural", "flat", "power", "nope"])
    layers = st.sampled_from(["top", "low1", "rack2", "nope"])
    power_words = st.lists(
        st.one_of(st.sampled_from(["down", "up", "asap", "force", "cloud01", "Reason=x"]), EDGES.map(str)),
        max_size=5,
    )

    @FUZZ
    @given(
        who=USERS,
        hres=_bodies(
            HRES,
            {"hres_name": "natural", "layer_name": "low1"},
            hres_name=st.one_of(hres_names, VALUES),
            layer_name=st.one_of(layers, VALUES),
        ),
        power=st.one_of(
            _bodies(("op", "nodes", "action", "reason"), {"op": "POWER_DOWN", "nodes": "cloud01"}),
            st.fixed_dictionaries({"args": st.one_of(power_words, VALUES)}),
        ),
        power_settings=_bodies(("SuspendExcNodes", "SuspendExcParts", "SuspendExcStates")),
    )
    def run(who, hres, power, power_settings):
        sender.send(who, "post", "/api/hres/", hres)
        sender.send(who, "post", "/api/power/", power)
        sender.send(who, "post", "/api/power/settings/", power_settings)

    run()
    sender.check_memory()
