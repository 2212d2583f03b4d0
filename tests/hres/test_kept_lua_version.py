"""resources.yaml's version in force, as hres/lua's scripts follow it
(hres.lua_process.version_in_force), kept between passes (#18 simulator speed): an oracle.

Every pass asks for it twice; kept inside ``pass_snapshot.keep()`` it must still equal a
fresh read after each write of ``hres.ResourcesFile``: through the ORM, by raw SQL, undone
by a rollback, and (live) by another process outside Django.  Kept without its table,
the first write leaves it stale.
"""

from __future__ import annotations

import os
import random
import sqlite3

import pytest
from django.db import connection, transaction
from django.db.models import F

from cluster.services import change_log, pass_snapshot
from hres import lua_process
from hres.models import ResourcesFile

pytestmark = pytest.mark.django_db(transaction=True)


def _steps(rng, foreign=None):
    def orm_bump():
        ResourcesFile.objects.filter(pk=1).update(version=F("version") + rng.randint(1, 3))

    def raw_set():
        with connection.cursor() as cursor:
            cursor.execute('UPDATE "hres_resourcesfile" SET "version" = %s', [rng.randint(0, 99)])

    def rolled_back():
        with pytest.raises(RuntimeError), transaction.atomic():
            ResourcesFile.objects.filter(pk=1).update(version=F("version") + 100)
            assert lua_process.version_in_force() == lua_process._read_version()
            raise RuntimeError

    def other_table():
        ResourcesFile.objects.filter(pk=1).update(path=f"r{rng.randint(0, 9)}.yaml")

    def deleted_and_back():
        ResourcesFile.objects.all().delete()
        assert lua_process.version_in_force() == 0
        ResourcesFile.objects.create(pk=1, version=rng.randint(1, 9))

    steps = [orm_bump, raw_set, rolled_back, other_table, deleted_and_back]
    if foreign is not None:
        steps += [lambda: foreign("UPDATE hres_resourcesfile SET version = version + 1")] * 2
    return steps


def _check(rng, steps):
    ResourcesFile.objects.get_or_create(pk=1)
    for _ in range(60):
        rng.choice(steps)()
        assert lua_process.version_in_force() == lua_process._read_version()
        assert lua_process.version_in_force() == lua_process._read_version()  # the kept one


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kept_version_is_the_one_in_the_database(seed):
    rng = random.Random(seed)
    with pass_snapshot.keep():
        _check(rng, _steps(rng))


@pytest.mark.skipif(bool(os.environ.get("FSCHED_DATABASE_URL")), reason="the test database is PostgreSQL")
def test_live_the_kept_version_follows_another_process():
    assert change_log.install(force=True)
    name = connection.settings_dict["NAME"]
    other = sqlite3.connect(name, uri=name.startswith("file:"), isolation_level=None, timeout=10)
    try:
        rng = random.Random(4)
        with pass_snapshot.keep(live=True):
            _check(rng, _steps(rng, other.execute))
    finally:
        other.close()
        change_log.uninstall()


def test_it_is_kept():
    ResourcesFile.objects.get_or_create(pk=1)
    with pass_snapshot.keep():
        lua_process.version_in_force()
        with connection.execute_wrapper(_count) as _:
            _count.reads = 0
            lua_process.version_in_force()
        assert _count.reads == 0


def _count(execute, sql, params, many, context):
    _count.reads += 1
    return execute(sql, params, many, context)
