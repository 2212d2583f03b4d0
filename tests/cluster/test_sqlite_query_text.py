"""The embedded backend rewrites a statement's ``%s`` into SQLite's ``?`` once per text
(config.sqlite.base._qmark), not at every execution: the same text as Django's rewrite."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.db.backends.sqlite3 import base as django_sqlite

from config.sqlite import base
from tests.cluster.test_sqlite_locks import _wrapper


class _Counted:
    def __init__(self, pattern):
        self.pattern = pattern
        self.subs = 0

    def sub(self, *args):
        self.subs += 1
        return self.pattern.sub(*args)


def test_each_text_is_rewritten_once(tmp_path: Path, monkeypatch, django_db_blocker) -> None:
    counted = _Counted(django_sqlite.FORMAT_QMARK_REGEX)
    monkeypatch.setattr(django_sqlite, "FORMAT_QMARK_REGEX", counted)
    base._qmark.cache_clear()
    # In a thread of its own, as the server's connections are: an earlier test (the
    # browser's) may leave an event loop running in this one, where Django refuses
    # synchronous database calls.
    with django_db_blocker.unblock(), ThreadPoolExecutor(1) as pool:
        pool.submit(_statements, tmp_path).result()
    assert counted.subs == 2


def _statements(tmp_path: Path) -> None:
    db = _wrapper(tmp_path / "q.sqlite3", "q")
    try:
        with db.cursor() as cur:
            cur.execute("CREATE TABLE t (x INTEGER, y TEXT)")
            for i in range(3):
                cur.execute("INSERT INTO t VALUES (%s, '100%%')", [i])
            cur.execute("SELECT x FROM t WHERE x >= %s AND y = '100%%' ORDER BY x", [1])
            assert cur.fetchall() == [(1,), (2,)]
            cur.execute("SELECT x FROM t WHERE x >= %s AND y = '100%%' ORDER BY x", [0])
            assert len(cur.fetchall()) == 3
            # Named parameters are Django's own rewrite, every time.
            cur.execute("SELECT x FROM t WHERE x = %(x)s", {"x": 2})
            assert cur.fetchall() == [(2,)]
    finally:
        db.close()


def test_the_same_text_as_djangos_rewrite() -> None:
    django_cursor = django_sqlite.SQLiteCursorWrapper.convert_query
    for query in (
        "SELECT 1",
        "SELECT %s",
        "SELECT * FROM t WHERE a = %s AND b LIKE '%%x%%' AND c IN (%s, %s)",
        "SELECT '%%s', %s",
    ):
        assert base._qmark(query) == django_cursor(None, query)
