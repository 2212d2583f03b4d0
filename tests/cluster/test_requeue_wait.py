"""cluster.core.requeue_wait: a requeued job's begin time, as batch_requeue_fini sets it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cluster.core.requeue_wait import cred_expire, requeued_begin

NOW = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("auth_info", "seconds"),
    [
        (None, 120),
        ("", 120),
        ("cred_expire=30", 30),
        ("socket=/run/munge.socket,cred_expire=5", 5),
        ("cred_expire=4", 120),  # under 5: cred.c's error, and the default
        ("cred_expire=soon", 120),
        ("cred_expire", 120),
    ],
)
def test_cred_expire(auth_info, seconds):
    assert cred_expire(auth_info) == seconds


def test_the_begin_time():
    assert requeued_begin(NOW, None, None) == NOW + timedelta(seconds=121)
    assert requeued_begin(NOW, NOW - timedelta(hours=1), "cred_expire=5") == NOW + timedelta(seconds=6)
    later = NOW + timedelta(hours=2)  # a --begin still ahead stays
    assert requeued_begin(NOW, later, None) == later
