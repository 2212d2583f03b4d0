"""The limits' reads kept between passes (pass_snapshot.kept_value, #18 simulator speed)
against a fresh read: an oracle.

Random sequences of the real services (submissions, passes, completions, suspensions,
sacctmgr changes, usage set directly, reconfigures, usage cycles, a usage record written
by no service) inside ``keep()``.  After every step the policy context, the usage records
and the pass's decisions (reasons, priorities, kills, accrue starts) read with what is
kept must equal those read after everything kept is forgotten.  Without ClusterConfig
in the context's tables or Usage in the usage records' some step leaves them different.
"""

from __future__ import annotations

import contextlib
import random

import pytest

from cluster.services import pass_snapshot
from cluster.services.errors import ServiceError
from cluster.services.scheduling import decide
from limits import selectors
from limits.models import Usage
from limits.services import usage_cycle_run
from tests.limits.test_usage_cycle_oracle import _steps, reconfigure, register, science_tree, virtual_now  # noqa: F401

pytestmark = pytest.mark.django_db


def _assert_same(now):
    ctx = selectors.context()
    usage = selectors.usage_records()
    result = decide(now)[3]
    pass_snapshot.forget()
    fresh = selectors.context()
    assert (ctx.version, ctx.enforce, ctx.priority) == (fresh.version, fresh.enforce, fresh.priority)
    assert ctx.policy is fresh.policy  # built again only for a new revision, as before
    assert usage == selectors.usage_records()
    assert result == decide(now)[3]


@pytest.mark.parametrize("seed", [1, 2])
def test_kept_limits_reads_equal_a_fresh_read(reconfigure, users, virtual_now, seed):  # noqa: F811
    reconfigure("PriorityDecayHalfLife=60\nPriorityWeightFairshare=1000\nPriorityWeightAge=100")
    science_tree(users["admin"], fast_priority=10)
    register(virtual_now[0])
    rng = random.Random(seed)
    steps = _steps(rng, users, reconfigure, virtual_now)
    steps += [
        (lambda: usage_cycle_run(now=virtual_now[0]), 4),
        # A usage record written by no service: the usage records follow the table.
        (lambda: Usage.objects.filter(key="assoc|physics||").update(raw_usage=rng.random() * 1e5), 1),
    ]
    funcs, weights = zip(*steps, strict=True)
    with pass_snapshot.keep():
        for _ in range(50):
            step = rng.choices(funcs, weights)[0]
            with contextlib.suppress(ServiceError):  # a refusal: still compared
                step()
            _assert_same(virtual_now[0])
