"""The console pages through Django's test client: login, content, escaping, query counts."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cluster import selectors
from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Event, Job, Node, Partition

pytestmark = pytest.mark.django_db

PAGES = ["/", "/nodes/", "/jobs/", "/nodes/node01/", "/jobs/7/"]
FRAGMENTS = [
    "/_grid",
    "/_summary",
    "/_events",
    "/nodes/_grid",
    "/nodes/_counts",
    "/jobs/_table",
    "/nodes/node01/_body",
    "/jobs/7/_body",
]
XSS = '<script>alert("x")</script>'


def make_job(job_id: int, **kw) -> Job:
    now = timezone.now()
    defaults = {"user": "alice", "partition": "debug", "name": f"job{job_id}", "submit_time": now}
    return Job.objects.create(id=job_id, **{**defaults, **kw})


@pytest.fixture
def cluster_data() -> None:
    Partition.objects.create(name="debug", nodes="node[01-02]", is_default=True)
    Partition.objects.create(name="batch", nodes="node[02-04]", position=1)
    Node.objects.create(name="node01", cpus=4, base_state=NodeBase.MIXED, alloc_cpus=2)
    Node.objects.create(
        name="node02", cpus=4, base_state=NodeBase.IDLE, flags=NodeFlag.DRAIN, reason="bad fan"
    )
    Node.objects.create(name="node03", cpus=4, base_state=NodeBase.IDLE, flags=NodeFlag.POWERED_DOWN)
    Node.objects.create(name="node04", cpus=4, base_state=NodeBase.DOWN, flags=NodeFlag.NOT_RESPONDING)
    now = timezone.now()
    make_job(
        7,
        state="RUNNING",
        reason="None",
        node_list="node01",
        start_time=now - timedelta(seconds=65),
        alloc={"node01": [2, 100]},
    )
    make_job(
        8,
        state="PENDING",
        reason="Resources",
        reason_detail="needs 8 CPUs, 6 free",
        user="bob",
        partition="batch",
    )
    make_job(9, state="COMPLETED", node_list="node01", start_time=now - timedelta(minutes=5), end_time=now)
    Event.objects.create(
        time=now, kind="job", job_id=7, old_state="PENDING", new_state="RUNNING", node="node01"
    )
    Event.objects.create(
        time=now,
        kind="node",
        node="node02",
        old_state="IDLE",
        new_state="IDLE+DRAIN",
        reason="bad fan",
        user="root",
    )


@pytest.fixture
def user_client(client, cluster_data):
    user = User.objects.create_user("alice", password="pw")
    client.force_login(user)
    return client


@pytest.fixture
def staff_client(client, cluster_data):
    user = User.objects.create_user("root", password="pw", is_staff=True)
    client.force_login(user)
    return client


def tiles(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-node="([^"]+)" data-state="([^"]+)"', html))


def rows(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-job-id="(\d+)" data-state="([A-Z_]+)"', html))


# --- login and methods ------------------------------------------------------------------


@pytest.mark.parametrize("url", PAGES + FRAGMENTS)
def test_anonymous_is_sent_to_the_console_login(client, cluster_data, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_anonymous_fragment_request_redirects_the_whole_page(client, cluster_data):
    response = client.get(
        "/nodes/_grid", headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/nodes/"}
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=/nodes/"
    assert b"data-node" not in response.content


@pytest.mark.parametrize("url", PAGES + FRAGMENTS)
def test_every_page_and_fragment_renders(user_client, url):
    assert user_client.get(url).status_code == 200


@pytest.mark.parametrize("url", ["/", "/jobs/", "/nodes/_grid"])
def test_the_console_only_reads(user_client, url):
    assert user_client.post(url).status_code == 405


def test_unknown_node_and_job_are_404(user_client):
    assert user_client.get("/nodes/nope/").status_code == 404
    assert user_client.get("/jobs/999/").status_code == 404
    assert user_client.get("/jobs/999/_body").status_code == 404


# --- navigation ---------------------------------------------------------------------------


def test_navigation_marks_the_current_page_and_hides_admin_from_users(user_client):
    html = user_client.get("/jobs/").content.decode()
    assert '<a href="/jobs/" aria-current="page">Jobs</a>' in html
    assert 'href="/api/docs/"' in html
    assert 'href="/admin/"' not in html
    assert "alice" in html and "Log out" in html


def test_staff_see_the_admin_link(staff_client):
    assert 'href="/admin/"' in staff_client.get("/").content.decode()


def test_base_page_loads_htmx_and_live_js_from_our_own_static_files(user_client):
    html = user_client.get("/").content.decode()
    assert re.search(r'<script src="/static/django_htmx/htmx-2\.min\.js" defer>', html)
    assert '<script src="/static/js/live.js" defer>' in html
    assert 'id="live-status"' in html
    assert "http://" not in html.replace("http://testserver", "") and "https://" not in html


# --- node grid ----------------------------------------------------------------------------


def test_grid_shows_each_node_with_its_sinfo_state(user_client):
    html = user_client.get("/nodes/").content.decode()
    assert tiles(html) == {"node01": "mix", "node02": "drain", "node03": "idle~", "node04": "down*"}
    assert 'class="tile s-mix"' in html
    assert 'class="tile s-idle p-off"' in html
    assert 'class="tile s-down nr"' in html
    assert "2/4" in html  # CPUs allocated/total on the tile
    # The legend explains colours and every suffix fsched prints.
    for char, meaning in selectors.NODE_SUFFIXES:
        assert f"<code>{char}</code> {meaning}" in html


def test_grid_fragment_is_the_same_element_the_page_renders(user_client):
    page = user_client.get("/nodes/?partition=batch").content.decode()
    fragment = user_client.get("/nodes/_grid?partition=batch").content.decode()
    grid = re.search(r'<section id="node-grid".*?</section>', page, re.S).group(0)
    assert grid.strip() == fragment.strip()
    assert 'hx-get="/nodes/_grid?partition=batch"' in fragment
    assert 'data-live-topic="nodes"' in fragment
    assert set(tiles(fragment)) == {"node02", "node03", "node04"}


def test_grid_grouped_by_partition_lists_a_node_in_each_of_its_partitions(user_client):
    html = user_client.get("/nodes/_grid?group=partition").content.decode()
    assert len(re.findall(r'data-node="node02"', html)) == 2
    assert '<h3 class="group-title">debug' in html and '<h3 class="group-title">batch' in html


def test_node_counts_per_state(user_client):
    html = user_client.get("/nodes/_counts").content.decode()
    counts = dict(re.findall(r'data-state="([^"]+)">.*?<strong>(\d+)</strong>', html))
    assert counts == {"idle~": "1", "mix": "1", "drain": "1", "down*": "1"}


def test_grid_for_2048_nodes_reads_nothing_per_node(user_client):
    Node.objects.bulk_create(
        Node(name=f"n{i:04d}", cpus=64, alloc_cpus=i % 65, base_state=NodeBase.MIXED) for i in range(2048)
    )
    with CaptureQueriesContext(connection) as queries:
        assert len(selectors.node_tiles()) == 2052
    assert len(queries) == 1
    user_client.get("/nodes/_grid")  # warm the template cache
    with CaptureQueriesContext(connection) as queries:
        response = user_client.get("/nodes/_grid")
    assert len(tiles(response.content.decode())) == 2052
    # session + user + the configuration's revision (PrivateData=nodes) + the nodes:
    # nothing per node.
    # Its time is measured by bench/console_scale.py, never asserted here.
    assert len(queries) <= 4, [q["sql"] for q in queries]


# --- jobs ---------------------------------------------------------------------------------


def test_job_list_defaults_to_active_jobs_like_squeue(user_client):
    html = user_client.get("/jobs/").content.decode()
    assert rows(html) == {"7": "RUNNING", "8": "PENDING"}
    for column in ("JOBID", "NAME", "USER", "PARTITION", "STATE", "TIME", "NODES", "NODELIST(REASON)"):
        assert re.search(rf">{re.escape(column)}(</a>)?</th>", html), column
    # squeue TIME of the running job, started 65 s before the fixture ended: the clock runs
    # on until the request, by seconds on a loaded machine.
    assert re.search(r"\b1:(0[5-9]|[1-5]\d)\b", html)


def test_pending_job_shows_its_reason_and_detail(user_client):
    html = user_client.get("/jobs/_table").content.decode()
    row = re.search(r'<tr data-job-id="8".*?</tr>', html, re.S).group(0)
    assert "(Resources)" in row
    assert 'title="needs 8 CPUs, 6 free"' in row
    assert '<span class="reason-detail">needs 8 CPUs, 6 free</span>' in row


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("state=all", {"7", "8", "9"}),
        ("state=CD", {"9"}),
        ("state=pending,R", {"7", "8"}),
        ("user=bob", {"8"}),
        ("partition=debug&state=all", {"7", "9"}),
    ],
)
def test_job_filters(user_client, query, expected):
    html = user_client.get(f"/jobs/_table?{query}").content.decode()
    assert set(rows(html)) == expected
    # The refreshed fragment keeps the filter it was asked with.
    assert re.search(r'hx-get="/jobs/_table\?[^"]+"', html)


def test_bad_state_filter_says_so(user_client):
    html = user_client.get("/jobs/?state=BOGUS").content.decode()
    assert "Invalid job state specified: BOGUS" in html


def test_filter_change_keeps_the_address_bar_on_the_page(user_client):
    response = user_client.get(
        "/jobs/_table?state=all&user=bob",
        headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/jobs/"},
    )
    assert response["HX-Replace-Url"] == "/jobs/?state=all&user=bob"
    # A refresh from the dashboard does not touch its address.
    response = user_client.get(
        "/jobs/_table", headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/"}
    )
    assert "HX-Replace-Url" not in response


def test_job_summary_counts(user_client):
    html = user_client.get("/_summary").content.decode()
    counts = dict(re.findall(r'data-job-state="([A-Z_]+)">.*?<dd>(\d+)</dd>', html, re.S))
    assert counts == {"PENDING": "1", "RUNNING": "1", "COMPLETED": "1"}


def test_summary_lists_pending_reasons_in_plain_words(user_client):
    make_job(10, state="PENDING", reason="Resources")
    make_job(11, state="PENDING", reason="JobHeldUser")
    html = user_client.get("/_summary").content.decode()
    reasons = dict(re.findall(r'data-reason="(\w+)">.*?<strong>(\d+)</strong>', html))
    assert reasons == {"Resources": "2", "JobHeldUser": "1"}
    assert list(reasons) == ["Resources", "JobHeldUser"]  # most common first
    assert selectors.REASON_TEXT["JobHeldUser"].replace("'", "&#x27;") in html


def test_pending_job_detail_explains_the_reason(user_client):
    html = user_client.get("/jobs/8/").content.decode()
    assert "Why pending:" in html
    assert "needs 8 CPUs, 6 free" in html
    assert selectors.REASON_TEXT["Resources"] in html


def test_job_detail_is_an_scontrol_table_with_a_timeline(user_client):
    html = user_client.get("/jobs/7/").content.decode()
    assert '<th scope="row">JobState</th><td>RUNNING</td>' in html
    assert '<th scope="row">NodeList</th><td>node01</td>' in html
    assert '<th scope="row">StdOut</th><td>/tmp/slurm-7.out</td>' in html
    assert re.search(r'<ol class="timeline">.*PENDING</span> → <strong>RUNNING', html, re.S)


def test_a_running_job_s_end_time_is_its_start_plus_its_limit(user_client):
    # As scontrol show job and the API say it (slurmctld sets end_time at the start).
    job = Job.objects.get(pk=7)
    Job.objects.filter(pk=7).update(time_limit=10)
    end = timezone.localtime(job.start_time + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S")
    html = user_client.get("/jobs/7/").content.decode()
    assert f'<th scope="row">EndTime</th><td>{end}</td>' in html
    expected = (job.start_time + timedelta(minutes=10)).isoformat()
    assert user_client.get("/api/jobs/7/").json()["end_time"] == expected


def test_node_detail_shows_scontrol_fields_jobs_and_events(user_client):
    html = user_client.get("/nodes/node02/").content.decode()
    assert '<th scope="row">State</th><td>IDLE+DRAIN</td>' in html
    assert '<th scope="row">Partitions</th><td>debug,batch</td>' in html
    assert "bad fan [root@" in html
    assert "IDLE+DRAIN</span>" in html  # its event
    html = user_client.get("/nodes/node01/").content.decode()
    assert rows(html) == {"7": "RUNNING"}


def test_dashboard_has_node_counts_summary_and_events(user_client):
    html = user_client.get("/").content.decode()
    # Nodes by state and power state instead of the grid (the nodes page has it).
    assert dict(re.findall(r'data-node-state="(\w+)"><dt>\w+</dt><dd>(\d+)</dd>', html)) == {
        "mixed": "1",
        "idle": "1",
        "drained": "1",
        "down": "1",
    }
    assert 'data-power-state="powered_down"' in html
    assert 'data-job-state="RUNNING"' in html
    assert 'href="/jobs/7/">job 7</a>' in html
    # Kept current by the shared publisher's socket: nothing on it is re-fetched per browser.
    assert 'data-overview-ws="/ws/overview/"' in html
    assert "data-live-topic" not in html


# --- escaping -----------------------------------------------------------------------------


def test_user_data_is_escaped_everywhere(user_client):
    make_job(66, name=XSS, user="mallory", reason="Resources", reason_detail=XSS, command=XSS)
    Node.objects.filter(name="node02").update(reason=XSS)
    Event.objects.create(time=timezone.now(), kind="job", job_id=66, new_state="PENDING", reason=XSS)
    for url in ["/", "/jobs/", "/jobs/_table", "/jobs/66/", "/nodes/", "/nodes/node02/", "/_events"]:
        html = user_client.get(url).content.decode()
        assert XSS not in html, url
        assert "<script>alert" not in html, url
    html = user_client.get("/jobs/66/").content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
