"""Benchmark: the live controller's sustained start rate at scale.

    .venv/bin/python -m bench.scale_throughput [--nodes 10000] [--agents 10] [--seconds 600]
        [--clients 8] [--run-time 60] [--shape singles|arrays] [--array-size 100]
        [--mode embedded|distributed] [--up-timeout S] [--keep-logs DIR]

A real embedded controller (its server, passes and cycles, SQLite) with ``--nodes`` nodes
of 64 CPUs, served by ``--agents`` agents in ``--simulate-exec`` mode (a job holds its node
for FSCHED_SIM_RUN_TIME seconds without a process: agent/README.md), while ``--clients``
API clients submit one-CPU jobs as fast as they are answered for ``--seconds``. Every 10 s
it counts the jobs that have left PENDING (one query: every state but PENDING, so a
window's starts are the jobs that left PENDING in it, not submitted minus pending sampled
at two moments); it prints the start rate of each window, their median (the sustained
rate) and the whole run's. Slurm's published figure for simple batch
jobs is 500 jobs/s (the target).

``--mode distributed`` runs the same work on the README's distributed mode (PostgreSQL,
Redis, the server's uvicorn workers, a Celery worker and beat: bench.distributed), on a
database and Redis DB of its own made from FSCHED_DATABASE_URL and FSCHED_REDIS_URL.

``--shape arrays`` submits arrays of ``--array-size`` tasks instead, so that the API's
submission rate does not bound the starts.

While the nodes come up it prints every 10 s how many are IDLE, NOT_RESPONDING and
UNKNOWN; the measurement starts once all are IDLE and responding (or after
``--up-timeout``, saying so). At the end: the agent connections the server refused (by
reason), the agents that exited, and the nodes' states.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

from bench import distributed
from bench.cluster_throughput import Bench
from cluster.core.states import JobState
from config.demo import VENV_BIN, Cluster

WINDOW = 10.0


def write_conf(target: Path, nodes: int) -> str:
    names = f"sim[{1:05d}-{nodes:05d}]"
    (target / "slurm.conf").write_text(
        "ClusterName=scale\nSlurmctldHost=localhost\nSchedulerType=sched/backfill\n"
        "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\nSlurmdTimeout=300\n"
        "MaxJobCount=1000000\nMaxArraySize=100001\nReturnToService=1\nDisableRootJobs=NO\n"
        f"NodeName={names} CPUs=64 RealMemory=256000 State=UNKNOWN\n"
        f"PartitionName=batch Nodes={names} Default=YES MaxTime=INFINITE State=UP\n"
    )
    return names


def start_agents(cluster: Cluster, nodes: int, agents: int, state: Path) -> list[subprocess.Popen[bytes]]:
    per = -(-nodes // agents)
    procs = []
    for i in range(agents):
        first, last = i * per + 1, min(nodes, (i + 1) * per)
        if first > last:
            break
        procs.append(
            subprocess.Popen(
                [
                    str(VENV_BIN / "fsched"), "agent", "--nodes", f"sim[{first:05d}-{last:05d}]",
                    "--controller", f"ws://127.0.0.1:{cluster.port}", "--spool", str(state / f"agent{i}"),
                    "--cpus", "64", "--memory", "256000", "--simulate-exec", "--ping-interval", "30",
                    "--log-level", "WARNING",
                ],
                env=cluster.env,
                stdout=(state / f"agent{i}.log").open("ab"),
                stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
    return procs


def count(bench: Bench, query: str) -> int:
    return int(bench.api("GET", f"/api/jobs/?limit=1&{query}")["count"])


# Every state a job reaches once it has left PENDING (nothing here requeues a job).
LEFT_PENDING = ",".join(s.value for s in JobState if s != JobState.PENDING)


def left_pending(bench: Bench) -> int:
    """The jobs that ever started, counted by the database in one statement."""
    return count(bench, f"state={LEFT_PENDING}")


def given_up(state: Path) -> tuple[int, int]:
    """Runs given up as "missing from batch node" (cluster/services/launch_watch.py), and
    the jobs they were runs of, from the logs of the server and the workers: each is work
    thrown away and a start counted twice."""
    found = [
        int(m)
        for path in state.rglob("*.log")
        for m in re.findall(r"Batch JobId=(\d+) missing from batch node", path.read_text(errors="replace"))
    ]
    return len(found), len(set(found))


def node_count(bench: Bench, states: str) -> int:
    return int(bench.api("GET", f"/api/nodes/?limit=1&state={urllib.parse.quote(states)}").get("count", 0))


def node_states(bench: Bench) -> str:
    """The nodes IDLE, NOT_RESPONDING (any base) and UNKNOWN, as sinfo -t counts them."""
    counts = {word: node_count(bench, word) for word in ("IDLE", "NO_RESPOND", "UNKNOWN")}
    return " ".join(f"{word} {n}" for word, n in counts.items())


def refusals(state: Path) -> dict[str, int]:
    """The agent connections the server refused, by reason, from the logs."""
    found: dict[str, int] = {}
    for path in state.rglob("*.log"):
        for said in re.findall(r"agent connection from .* refused: (.*)", path.read_text(errors="replace")):
            why = re.sub(r"agent \S+", "agent X", said)
            found[why] = found.get(why, 0) + 1
    return found


def wait_nodes(bench: Bench, nodes: int, timeout: float) -> bool:
    """Until every node is IDLE and responding (IDLE* counts as IDLE for sinfo -t); False
    if they were not within ``timeout`` seconds."""
    began = time.monotonic()
    deadline = began + timeout
    shown = began
    while True:
        ready = node_count(bench, "IDLE") - node_count(bench, "IDLE&NO_RESPOND")
        if ready >= nodes:
            return True
        now = time.monotonic()
        if now - shown >= WINDOW:
            shown = now
            print(f"  waiting t={now - began:5.0f} s: {node_states(bench)} (load {os.getloadavg()[0]:.2f})",
                  flush=True)  # fmt: skip
        if now > deadline:
            print(f"only {ready} of {nodes} nodes up within {timeout:.0f} s: measuring anyway", flush=True)
            return False
        time.sleep(1)


def submitter(
    bench: Bench, body: dict, stop: threading.Event, submitted: list[int], errors: list[str]
) -> None:
    host, port = urllib.parse.urlsplit(bench.cluster.url).netloc.rsplit(":", 1)
    data = json.dumps(body).encode()
    headers = {"Authorization": f"Token {bench.token}", "Content-Type": "application/json"}
    first, _, last = str(body.get("array", "1-1")).partition("-")
    per = int(last or first) - int(first) + 1
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        while not stop.is_set():
            connection.request("POST", "/api/jobs/", body=data, headers=headers)
            response = connection.getresponse()
            answer = response.read()
            if response.status != 201:
                errors.append(f"{response.status} {answer[:200]!r}")
                return
            submitted[0] += per
    finally:
        connection.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.scale_throughput")
    p.add_argument("--nodes", type=int, default=10_000)
    p.add_argument("--agents", type=int, default=10)
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--run-time", type=float, default=60)
    p.add_argument("--shape", choices=("singles", "arrays"), default="singles")
    p.add_argument("--array-size", type=int, default=100)
    p.add_argument("--mode", choices=("embedded", "distributed"), default="embedded")
    p.add_argument("--up-timeout", type=float, help="seconds to wait for the nodes (nodes/20, 120 at least)")
    p.add_argument("--keep-logs", type=Path, help="copy the server's and agents' logs into this directory")
    args = p.parse_args(argv)
    db_url, redis_url = os.environ.get("FSCHED_DATABASE_URL", ""), os.environ.get("FSCHED_REDIS_URL", "")
    if args.mode == "distributed" and not (db_url and redis_url):
        p.error("--mode distributed needs FSCHED_DATABASE_URL and FSCHED_REDIS_URL")
    with tempfile.TemporaryDirectory(prefix="fsched-scale-") as tmp, contextlib.ExitStack() as stack:
        state = Path(tmp)
        urls = {"FSCHED_DATABASE_URL": "", "FSCHED_REDIS_URL": ""}
        if args.mode == "distributed":
            urls = {
                "FSCHED_DATABASE_URL": stack.enter_context(
                    distributed.fresh_database(db_url, f"fsched_scale_{os.getpid()}")
                ),
                "FSCHED_REDIS_URL": stack.enter_context(distributed.fresh_redis_db(redis_url)),
            }
        conf = state / "conf"
        conf.mkdir()
        write_conf(conf, args.nodes)
        cluster = Cluster(
            state_dir=state / "state", conf_dir=conf, port=18600 + (hash(tmp) % 300), quiet=True,
            env={"FSCHED_CLI_CONFIG": str(state / "cli.json"), "FSCHED_LOG_LEVEL": "WARNING", **urls},
            server_args=distributed.SERVER_ARGS if args.mode == "distributed" else (),
        )  # fmt: skip
        (state / "state").mkdir()
        cluster.setup()
        agents: list[subprocess.Popen[bytes]] = []
        celery: list[subprocess.Popen[bytes]] = []
        try:
            began = time.monotonic()
            cluster.start_server()
            if args.mode == "distributed":
                celery = distributed.start_celery(cluster.env, state)
            agents = start_agents(cluster, args.nodes, args.agents, state)
            bench = Bench(cluster)
            if wait_nodes(bench, args.nodes, timeout=args.up_timeout or max(120.0, args.nodes / 20)):
                up = time.monotonic() - began
                print(f"{args.nodes} nodes up in {up:.1f} s ({len(agents)} agents, {args.mode})", flush=True)
            body: dict = {
                "wrap": "true", "output": "/dev/null", "work_dir": "/tmp", "partition": "batch",
                "environment": {"FSCHED_SIM_RUN_TIME": str(args.run_time)},
            }  # fmt: skip
            if args.shape == "arrays":
                body["array"] = f"1-{args.array_size}"
            stop = threading.Event()
            submitted, errors = [0], []
            threads = [
                threading.Thread(target=submitter, args=(bench, body, stop, submitted, errors))
                for _ in range(args.clients)
            ]
            for t in threads:
                t.start()
            start = time.monotonic()
            rates, last_started, last_t = [], 0, start
            while time.monotonic() - start < args.seconds and not errors:
                time.sleep(WINDOW)
                started = left_pending(bench)
                now = time.monotonic()
                rates.append((started - last_started) / (now - last_t))
                print(f"  t={now - start:6.0f} s submitted {submitted[0]:8d} started {started:8d} "
                      f"window {rates[-1]:7.1f} jobs/s", flush=True)  # fmt: skip
                last_started, last_t = started, now
            stop.set()
            for t in threads:
                t.join()
            if errors:
                print(f"a submission was refused: {errors[0]}")
                return 1
            total = time.monotonic() - start
            diag = bench.api("GET", "/api/diag/")
            passes = {k: diag.get(k) for k in ("schedule", "backfill", "agent_queue_size")}
            print("sdiag (microseconds): " + json.dumps(passes)[:700])
            print(f"sustained start rate (median of {len(rates)} windows of {WINDOW:.0f} s): "
                  f"{statistics.median(rates):.1f} jobs/s; whole run {last_started / total:.1f} jobs/s "
                  f"(target: 500 jobs/s, Slurm's published figure)")  # fmt: skip
            runs, jobs = given_up(state)
            print(f"launches given up as missing from their batch node: {runs} ({jobs} jobs)")
            print(f"nodes at the end: {node_states(bench)}; load {os.getloadavg()}")
        finally:
            print(f"agent connections refused: {refusals(state) or 'none'}", flush=True)
            gone = [a.returncode for a in agents if a.poll() is not None]
            print(f"agents exited before the end: {len(gone)} (exit codes {gone})", flush=True)
            if args.keep_logs:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for path in state.rglob("*.log"):
                    shutil.copy(path, args.keep_logs / path.name)
            for a in agents:
                a.terminate()
            for a in agents:
                try:
                    a.wait(15)
                except subprocess.TimeoutExpired:
                    a.kill()
            cluster.stop()
            distributed.stop(celery)
    return 0


if __name__ == "__main__":
    sys.exit(main())
