"""The console's view of the hres/lua plugins (#17 point 9), through Django's test client:
the layer page shows the resource's plugin, its last maintenance run and its recent
errors; a job's page shows its plugin arguments and payload to its owner and staff only."""

from __future__ import annotations

import pytest

from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.scheduling import schedule_pass
from hres import lua_maintenance
from tests.hres.test_lua_callbacks import cluster, started, submit  # noqa: F401

pytestmark = pytest.mark.django_db


def test_layer_page_shows_the_plugin_its_last_maintenance_and_its_errors(cluster, client, users):  # noqa: F811
    started(
        cluster,
        "qpu",
        hres_maintenance="a[2].disable_layer = true",
        hres_controller_job_prerun='slurm.user_msg("<b>calibrating</b>") return slurm.ERROR',
    )
    client.force_login(users["alice"])
    page = client.get("/hres/qpu/qpu1/").content.decode()
    assert "hres/lua" in page and str(cluster.conf / "qpu.lua") in page
    assert "not run yet" in page and "No errors recorded." in page

    assert lua_maintenance.maintenance("qpu") == "rc=0 disabled=qpu2"
    submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    page = client.get("/hres/qpu/qpu1/").content.decode()
    assert "rc=0 disabled=qpu2" in page and "Disabled: qpu2" in page
    assert "<code>hres_controller_job_prerun</code> returned -1: &lt;b&gt;calibrating&lt;/b&gt;" in page
    assert "<b>calibrating</b>" not in page  # the plugin's text is escaped


def test_job_page_shows_plugin_args_and_payload_to_owner_and_staff_only(cluster, client, users):  # noqa: F811
    started(
        cluster,
        "qpu",
        hres_controller_job_prerun='return slurm.SUCCESS, "token=" .. a.job_id',
    )
    job_id = submit(users["alice"], licenses="qpu:1[mode=fast]")
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == JobState.RUNNING
    for who in ("alice", "admin"):
        client.force_login(users[who])
        page = client.get(f"/jobs/{job_id}/").content.decode()
        assert "<code>mode=fast</code>" in page, who
        assert f'<code class="hres-payload">token={job_id}</code>' in page, who
    client.force_login(users["bob"])
    answer = client.get(f"/jobs/{job_id}/")
    page = answer.content.decode()
    assert answer.status_code == 200  # bob sees the job (no PrivateData) but not its payload
    assert "hres-payload" not in page and f"token={job_id}<" not in page
    assert "Resource plugins" not in page and "<code>mode=fast</code>" not in page
