"""A process forked while another thread holds the kept snapshot's locks (a Celery prefork
pool replacing a child while the worker's scheduling loop refreshes) starts with its own
locks and nothing kept: with the parent's, its first pass would wait forever."""

from __future__ import annotations

import os
import threading

from cluster.services import pass_snapshot


def _child_exit_code(check) -> int:
    pid = os.fork()
    if pid == 0:  # the child: no Django, no pytest, only the check
        try:
            os._exit(0 if check() else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_child_forked_while_the_locks_are_held_has_them_free():
    held, release = threading.Event(), threading.Event()

    def holder():
        with pass_snapshot._refreshing, pass_snapshot._lock:
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(10)
    try:

        def check():
            got = pass_snapshot._refreshing.acquire(timeout=2) and pass_snapshot._lock.acquire(timeout=2)
            return got and pass_snapshot._keeping == 0 and not pass_snapshot._live

        assert _child_exit_code(check) == 0
    finally:
        release.set()
        thread.join()


def test_a_child_forked_inside_keep_starts_with_nothing_kept():
    with pass_snapshot.keep():
        assert _child_exit_code(lambda: pass_snapshot._keeping == 0 and not pass_snapshot._values) == 0
        assert pass_snapshot._keeping == 1
    assert pass_snapshot._keeping == 0
