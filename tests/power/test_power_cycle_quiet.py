"""A power-save cycle that can decide nothing stops before reading a node
(power.cycle_input.quiet): on random clusters, mostly quiet, at times around the idle nodes'
SuspendTime and the powering nodes' ResumeTimeout and SuspendTimeout, ``quiet`` holds
whenever the nodes the cycle would read are none, and whenever it holds the cycle on every
node and every holding job decides nothing and defers nothing.  Nodes powering up or down
before their timeout are read by the cycle though it decides nothing about them: ``quiet``
holds then too (tests below check that it comes up, and that ``quiet`` without the timeouts
would be wrong)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from django.db import transaction

from cluster.core.slurmconf import parse_slurm_conf_text
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag
from cluster.models import Job, Node, Partition
from cluster.services import pass_snapshot
from cluster.services.configuration import config_load
from power import cycle_input, services
from power.core.config import power_config
from power.core.policy import RateState, power_cycle
from power.models import PowerState

pytestmark = pytest.mark.django_db

NOW = 1_767_225_600.0 + 86_400

CONF = """\
ClusterName=test
SlurmctldHost=ctl
SuspendProgram=/bin/true
ResumeProgram=/bin/true
SuspendTime={suspend}
ResumeTimeout=300
SuspendTimeout=60
{exc}
NodeName=n[01-30] CPUs=4
PartitionName=short Nodes=n[01-15] Default=YES {short}
PartitionName=long Nodes=n[10-30] {long}
PartitionName=spare Nodes=n[25-30] {spare}
"""

# What can make a cycle do something, one or two of them given to an otherwise quiet cluster.
_FLAGS = [
    NodeFlag.POWERING_UP,
    NodeFlag.POWERING_DOWN,
    NodeFlag.POWER_DOWN,
    NodeFlag.POWER_UP,
    NodeFlag.POWERED_DOWN | NodeFlag.POWER_UP,
    NodeFlag.COMPLETING,
    NodeFlag.REBOOT_REQUESTED,
    NodeFlag.DRAIN,
]
_DISTURBANCES = (
    "flag", "configuring", "held", "own", "never", "long", "down",
    "powering", "powering", "booting", "booting",
)  # fmt: skip
_POWERING = [NodeFlag.POWERING_UP, NodeFlag.POWERING_DOWN]


def _config(rng: random.Random):
    text = CONF.format(
        suspend=rng.choice([100, 600, "INFINITE"]),
        exc=rng.choice(["", "", "SuspendExcNodes=n[01-04]:2", "SuspendExcParts=long", "SuspendExcNodes=n07"]),
        short=rng.choice(["", "", "SuspendTime=50", "SuspendTime=INFINITE"]),
        long=rng.choice(["", "", "SuspendTime=900", "ResumeTimeout=100 SuspendTimeout=200"]),
        spare=rng.choice(["", "ResumeTimeout=600", "SuspendTimeout=20"]),
    )
    return power_config(parse_slurm_conf_text(text))


def _cluster(rng: random.Random) -> list[str]:
    """A quiet cluster (busy nodes held by running jobs, idle ones busy in the last 40 s,
    powered-down ones nobody holds), then up to two disturbances; returns them."""
    Partition.objects.create(name="short", nodes="n[01-15]")
    Partition.objects.create(name="long", nodes="n[10-30]")
    Partition.objects.create(name="spare", nodes="n[25-30]")
    names = [f"n{i:02d}" for i in range(1, 31)]
    nodes = {}
    for name in names:
        roll = rng.random()
        base = rng.choice([NodeBase.ALLOCATED, NodeBase.MIXED]) if roll < 0.3 else NodeBase.IDLE
        nodes[name] = Node(
            name=name,
            base_state=base,
            flags=NodeFlag.POWERED_DOWN if 0.3 <= roll < 0.55 else 0,
            # Whole seconds, so that some fall exactly on a cutoff.
            last_busy=datetime.fromtimestamp(NOW - rng.randint(0, 40), UTC),
            power_entered=datetime.fromtimestamp(NOW - rng.uniform(0, 400), UTC),
        )
    jobs = [(JobState.RUNNING, [n]) for n in names if nodes[n].base_state != NodeBase.IDLE]
    done = [rng.choice(_DISTURBANCES) for _ in range(rng.choice([0, 1, 1, 2]))]
    for kind in done:
        node = nodes[rng.choice(names)]
        if kind == "flag":
            node.flags |= rng.choice(_FLAGS)
        elif kind == "configuring":
            jobs.append((JobState.CONFIGURING, [node.name]))
        elif kind == "held":
            node.flags = NodeFlag.POWERED_DOWN
            jobs.append((rng.choice([JobState.RUNNING, JobState.CONFIGURING]), [node.name]))
        elif kind == "own":
            node.suspend_time = rng.choice([-1, 30, 5_000])
        elif kind == "never":
            node.last_busy = None
        elif kind == "long":
            node.last_busy = datetime.fromtimestamp(NOW - rng.choice([60, 120, 1_000]), UTC)
        elif kind == "powering":
            # Waiting for its timeout, or past it; held by a job or not; rarely without
            # the time it started.
            node.flags = rng.choice(_POWERING) | rng.choice(
                [0, 0, NodeFlag.POWERED_DOWN, NodeFlag.NOT_RESPONDING]
            )
            node.power_entered = rng.choice([node.power_entered, node.power_entered, None])
            if rng.random() < 0.3:
                jobs.append((JobState.RUNNING, [node.name]))
        elif kind == "booting":
            # A job waiting for some of its nodes to power up (or down, or past the timeout).
            alloc = sorted(rng.sample(names, rng.choice([1, 2, 3])))
            for name in rng.sample(alloc, rng.choice([0, 1, len(alloc)])):
                nodes[name].flags = rng.choice(_POWERING) | rng.choice([0, 0, NodeFlag.NOT_RESPONDING])
            jobs.append((JobState.CONFIGURING, alloc))
        else:
            node.base_state = NodeBase.DOWN
    Node.objects.bulk_create(nodes.values())
    for job_id, (state, alloc) in enumerate(jobs, start=1):
        Job.objects.create(
            id=job_id,
            user="alice",
            partition="short",
            submit_time=datetime.fromtimestamp(NOW - 3_000, UTC),
            state=state,
            alloc=alloc,
        )
    return done


def _every_node_decides(power, *, now, loaded, auto, exclusions) -> tuple:
    parts = services.partition_membership()
    nodes = [services.power_node(n, parts, now=now, loaded=loaded) for n in Node.objects.order_by("name")]
    jobs = [
        services.power_job(j) for j in Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES])
    ]
    result = power_cycle(
        power, nodes, jobs, now=now, rates=RateState(), exclusions=exclusions, auto_enabled=auto
    )
    return result.decisions, result.deferred_suspends, result.deferred_resumes


def _lengths(power) -> set[int]:
    """The finite SuspendTimes of the configuration."""
    lengths = {power.suspend_time, *(p.suspend_time for p in power.partitions.values())}
    return {s for s in lengths if s is not None and s >= 0}


def _times(power) -> list[float]:
    """Now, and each time a node's idle time reaches a SuspendTime the configuration gives,
    at the store's cutoff (a second early) and half a second either side; each time a
    powering node's time reaches a ResumeTimeout or SuspendTimeout, exactly and half a
    second either side."""
    lengths = _lengths(power)
    busy = {n.timestamp() for n in Node.objects.exclude(last_busy=None).values_list("last_busy", flat=True)}
    times = {NOW, NOW + 10_000}
    for since in busy:
        for length in lengths:
            times |= {since + length - 1 + d for d in (-0.5, 0.0, 0.5)}
    timeouts = {power.resume_timeout, power.suspend_timeout}
    timeouts |= {t for p in power.partitions.values() for t in (p.resume_timeout, p.suspend_timeout) if t}
    entered = Node.objects.exclude(power_entered=None).values_list("power_entered", flat=True)
    for since in {n.timestamp() for n in entered}:
        for length in timeouts:
            times |= {since + length + d for d in (-0.5, 0.0, 0.5)}
    return sorted(times)


def _cases(seed: int) -> list[tuple[bool, bool]]:
    """(quiet, no node read) at each time of a random cluster; with every quiet answer
    checked against the cycle on every node."""
    rng = random.Random(seed)
    power = _config(rng)
    _cluster(rng)
    auto = rng.random() < 0.85
    exclusions = power.exclusions
    found = cycle_input.watch()
    holding = cycle_input.holding_allocs()
    out = []
    for now in _times(power):
        # The configuration's load time counts for a node never busy: on the cutoff too.
        loaded = rng.choice([NOW - 4_000, NOW - 30, now - min(_lengths(power), default=0) + 1])
        names = cycle_input.cycle_node_names(
            power, now=now, loaded=loaded, auto=auto, exclusions=exclusions, holding=holding
        )
        is_quiet = cycle_input.quiet(found, power, now=now, loaded=loaded, auto=auto, exclusions=exclusions)
        out.append((is_quiet, not names))
        if is_quiet:
            assert _every_node_decides(power, now=now, loaded=loaded, auto=auto, exclusions=exclusions) == (
                (),
                (),
                (),
            )
    return out


@pytest.mark.parametrize("seed", range(80))
def test_quiet_whenever_the_cycle_would_read_no_node(seed) -> None:
    for is_quiet, none_read in _cases(seed):
        assert is_quiet or not none_read


def _seen() -> dict[tuple[bool, bool], int]:
    seen = {(True, True): 0, (True, False): 0, (False, False): 0}
    for seed in range(80):
        with transaction.atomic():
            for case in _cases(seed):
                seen[case] += 1
            transaction.set_rollback(True)
    return seen


def test_the_random_clusters_are_quiet_and_not_and_quiet_with_powering_nodes() -> None:
    """The cases above test something: each answer comes up often, and so do quiet
    cycles whose nodes would be read (powering nodes before their timeout)."""
    seen = _seen()
    assert min(seen.values()) >= 50, seen


def test_quiet_without_the_timeouts_would_be_wrong(monkeypatch) -> None:
    """The powering nodes' timeouts matter: a watch that forgets them (every powering
    node taken as before its timeout) says quiet where the cycle decides something."""
    forgetful = cycle_input.watch

    def watch():
        found = forgetful()
        return replace(found, timers=())

    monkeypatch.setattr(cycle_input, "watch", watch)
    with pytest.raises(AssertionError):
        _seen()


def test_a_quiet_cycle_writes_its_row_as_the_full_cycle_writes_it(tmp_path, settings) -> None:
    """The cycle's own row after a quiet run: its time, the dirty mark cleared, the
    rates pruned, as the cycle on every node writes them."""
    (tmp_path / "slurm.conf").write_text(CONF.format(suspend=600, exc="", short="", long="", spare=""))
    settings.CONF_DIR = tmp_path
    config_load(path=tmp_path / "slurm.conf")
    Node.objects.update(base_state=NodeBase.IDLE, flags=0, last_busy=datetime.fromtimestamp(NOW - 60, UTC))
    state = PowerState.current()
    state.dirty = True
    state.rates = {"suspends": [NOW - 100, NOW - 30], "resumes": [NOW - 61]}
    state.save()
    power = services.settings_in_force()
    with pass_snapshot.keep():
        assert cycle_input.quiet(
            cycle_input.watch(), power, now=NOW, loaded=NOW - 4_000, auto=True, exclusions=power.exclusions
        )
        assert services.power_pass(now=datetime.fromtimestamp(NOW, UTC), force=True) == (
            "decisions=0 deferred_suspends=0 deferred_resumes=0"
        )
    state.refresh_from_db()
    assert (state.dirty, state.last_run.timestamp(), state.rates) == (
        False,
        NOW,
        {"suspends": [NOW - 30], "resumes": []},
    )
