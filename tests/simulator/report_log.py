"""A hand-written event log for the report's tests, with the figures worked out by hand.

Three nodes: n1 (4 CPUs, batch), n2 (4 CPUs, batch and debug), n3 (2 CPUs, debug), 10 CPUs
in all; n3 is powered down until t=20, powering up until t=30.  Span 100 s.

job  user      account  partition  submit  start  wait  end  run  state      CPUs
 1   alice     physics  batch        0       0     0    40   40  COMPLETED   4
 2   bob       chem     batch        0      10    10    60   50  TIMEOUT     2
 3   <script>  physics  debug        5      30    25    80   50  FAILED      2
 4   alice     chem     debug       70      90    20     -    -  (running)   1
 6   bob       chem     debug        0       2     2     5    3  COMPLETED   1
 5   rejected at submission (Invalid account)

CPU-seconds allocated: 160 + 100 + 100 + 10 (job 4, to the end) + 3 = 373.
"""

from __future__ import annotations

import json
from pathlib import Path

XSS = "<script>alert(1)</script>"
INVALID_ACCOUNT = "Batch job submission failed: Invalid account or account/partition combination specified"


def job(kind: str, t: float, number: int, **keys: object) -> dict:
    return {"t": t, "event": kind, "job": number, **keys}


def start(t: float, number: int, who: tuple[str, str, str], nodes: list, *, cpus: int, wait: float) -> dict:
    """``who``: (user, account, partition)."""
    user, account, partition = who
    return job(
        "start", t, number, fsched_id=1000 + number, user=user, account=account, partition=partition,
        nodes=nodes, cpus=cpus, wait=wait,
    )  # fmt: skip


def submit(t: float, number: int, user: str, account: str, partition: str) -> dict:
    return job("submit", t, number, fsched_id=1000 + number, user=user, account=account, partition=partition)


def end(t: float, number: int, state: str, run: float) -> dict:
    return job("end", t, number, fsched_id=1000 + number, state=state, run=run)


def node(t: float, name: str, state: str) -> dict:
    return {"t": t, "event": "node", "node": name, "state": state}


def layers(t: float, resource: str, layer: str, used: float, count: float) -> dict:
    return {"t": t, "event": "layers", "resource": resource, "layer": layer, "used": used, "count": count}


META = {
    "t": 0,
    "event": "meta",
    "start_epoch": 1_800_000_000,
    "conf": "examples/demo",
    "workload": "hand.swf",
    "nodes": [
        {"name": "n1", "cpus": 4, "memory": 8000, "partitions": ["batch"]},
        {"name": "n2", "cpus": 4, "memory": 8000, "partitions": ["batch", "debug"]},
        {"name": "n3", "cpus": 2, "memory": 4000, "partitions": ["debug"]},
    ],
    "partitions": {"batch": ["n1", "n2"], "debug": ["n2", "n3"]},
    "resources": {"scratch": {"fast": 4, "slow": 10}},
}

LOG: list[dict] = [
    META,
    node(0, "n3", "idle~"),
    submit(0, 1, "alice", "physics", "batch"),
    submit(0, 2, "bob", "chem", "batch"),
    submit(0, 6, "bob", "chem", "debug"),
    start(0, 1, ("alice", "physics", "batch"), ["n1"], cpus=4, wait=0),
    node(0, "n1", "allocated"),
    start(2, 6, ("bob", "chem", "debug"), ["n2"], cpus=1, wait=2),
    node(2, "n2", "mixed"),
    end(5, 6, "COMPLETED", 3),
    node(5, "n2", "idle"),
    submit(5, 3, XSS, "physics", "debug"),
    job("reason", 5, 2, reason="AssocGrpCpuLimit"),
    job("reason", 5, 3, reason="Resources"),
    job("reason", 6, 3, reason="AssocGrpCpuLimit"),
    job("reason", 7, 2, reason="AssocGrpCpuLimit"),  # the same job again: still one job
    start(10, 2, ("bob", "chem", "batch"), ["n2"], cpus=2, wait=10),
    node(10, "n2", "mixed"),
    layers(10, "scratch", "fast", 2, 4),
    node(20, "n3", "idle#"),
    node(30, "n3", "idle"),
    start(30, 3, (XSS, "physics", "debug"), ["n3"], cpus=2, wait=25),
    node(30, "n3", "allocated"),
    end(40, 1, "COMPLETED", 40),
    node(40, "n1", "idle"),
    layers(40, "scratch", "fast", 0, 4),
    job("load", 50, 2, action="stop", reason="LoadStopR1m"),
    job("load", 55, 3, action="stop", reason="LoadStopMem"),
    end(60, 2, "TIMEOUT", 50),
    node(60, "n2", "idle"),
    submit(70, 4, "alice", "chem", "debug"),
    job("reason", 70, 4, reason="QOSMaxJobsPerUserLimit"),
    job("reject", 72, 5, error=INVALID_ACCOUNT),
    end(80, 3, "FAILED", 50),
    node(80, "n3", "idle"),
    start(90, 4, ("alice", "chem", "debug"), ["n2"], cpus=1, wait=20),
    node(90, "n2", "mixed"),
    {"t": 100, "event": "done", "jobs": 6, "simulated_seconds": 100, "wall_seconds": 0.5},
]


def write_log(path: Path, events: list[dict] = LOG) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path
