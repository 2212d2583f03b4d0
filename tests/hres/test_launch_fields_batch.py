"""The launches of a pass ask hres/lua for what their nodes receive once for them all
(``launch_fields_many``): resources.yaml's version is read once for the batch, not once a
launched job, and the fields equal those ``launch_fields`` gives each job on its own."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.scheduling import schedule_pass
from hres import lua_plugins
from hres.extension import HresExtension
from hres.models import JobPluginRun
from tests.hres.test_lua_callbacks import Cluster, started, submit

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cluster(tmp_path, settings):
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "examples" / "demo", conf)
    with (conf / "partitions.conf").open("a") as f:
        f.write("PartitionName=q Nodes=node[01-04] MaxTime=60 DefaultTime=10\n")
    settings.CONF_DIR = conf
    lua_plugins.install(lua_plugins.Prepared({}, {}))
    yield Cluster(conf)
    lua_plugins.install(lua_plugins.Prepared({}, {}))


def version_reads(queries) -> int:
    """The reads of resources.yaml's version alone (hres.lua_process.version_in_force)."""
    return sum(q["sql"].startswith('SELECT "hres_resourcesfile"."version" FROM') for q in queries)


@pytest.mark.parametrize("plugins", [(), ("qpu",)])
def test_a_pass_reads_the_version_in_force_as_often_whatever_it_launches(cluster, users, plugins):
    started(cluster, *plugins) if plugins else cluster.load()
    reads = {}
    for count in (1, 6):
        # The first asks for the resource (its pre-run runs), the others for nothing.
        ids = [submit(users["alice"], licenses="qpu:1" if plugins and i == 0 else "") for i in range(count)]
        with CaptureQueriesContext(connection) as queries:
            schedule_pass()
        assert set(Job.objects.filter(pk__in=ids).values_list("state", flat=True)) == {JobState.RUNNING}
        reads[count] = version_reads(queries)
        Job.objects.filter(pk__in=ids).update(state=JobState.COMPLETED, alloc={})
    assert reads[1] == reads[6] <= 3  # the pass's plugins, the launches, the epilogs


def test_the_fields_of_a_batch_equal_each_jobs_own(cluster, users):
    started(cluster, "qpb", "qpu")
    rng = random.Random(7)
    jobs = []
    for _ in range(12):
        job = Job.objects.get(pk=submit(users["bob"]))
        job.restart_count = rng.randrange(3)
        jobs.append(job)
        for run in range(job.restart_count + 1):
            for position, resource in enumerate(("qpb", "qpu")):
                if rng.random() < 0.6:
                    prep = {"name": resource, "payload": rng.choice((None, f"t{run}")), "layers": []}
                    if rng.random() < 0.3:
                        prep["async_owner"] = "w1"  # a marker of the controller's, never sent
                    JobPluginRun.objects.create(
                        job=job, run=run, resource=resource, position=position, prep=prep
                    )
    ext = HresExtension()
    together = ext.launch_fields_many(jobs)
    assert together == {job.id: ext.launch_fields(job) for job in jobs}
    assert sum(bool(fields) for fields in together.values()) >= 6  # most jobs have preps
