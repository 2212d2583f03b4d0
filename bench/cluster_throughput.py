"""End-to-end figures on the demo cluster (a real controller and agent on this machine).

* throughput of 1,000 trivial jobs (``--wrap=true``) in the demo's ``batch`` partition
  (64 CPUs, as the Slurm baseline's one slurmd), first submit to last completion,
  submitted as one array (one ``fsched sbatch -a``) and as 1,000 single jobs (8 API
  clients in parallel);
* API submission rate with 8 concurrent clients, each keeping its HTTP/1.1 connection as
  any HTTP library does (held jobs, so only submission counts);
* latency of one ``fsched sbatch --wrap=true``, the CLI's start-up included.

Each figure is the median of several runs; the end-to-end ones also give the CPU per job
of the server, the agent and the jobs' processes (from /proc), and the scheduler's passes
per 1,000 jobs with the main pass's mean wall time (sdiag's counters).  ``--profile DIR`` runs
the server's and the agent's every thread under cProfile with each thread's CPU time as
its clock (bench/thread_profile.py) and writes, per end-to-end run, the CPU per job of
each thread and a pstats file per process (``DIR/<figure>-<run>-<process>.prof``).  Usage:
``python -m bench.cluster_throughput [--runs N] [--jobs N] [--mode both|embedded|distributed]
[--profile DIR]``; with FSCHED_DATABASE_URL and
FSCHED_REDIS_URL set, distributed mode is measured too (on its own database and Redis DB:
bench.distributed) and a table puts the two side by side.  Both clusters run at once,
idle but for the figure being measured, and their runs take turns, so that the machine's
drift falls on both alike.  ``--runs 1 --jobs 300`` is the quick run for development.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import marshal
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from bench import distributed, reference, thread_profile
from config.demo import Cluster

ROOT = Path(__file__).resolve().parent.parent
FSCHED = str(Path(sys.executable).parent / "fsched")
# The demo's batch partition: 16 nodes x 4 = 64 CPUs, the size of the Slurm baseline's slurmd.
PARTITION = "batch"


def _proc_table() -> tuple[dict[int, int], dict[int, tuple[float, float]]]:
    """Every process's parent, and its CPU seconds: its own (all its threads), and its
    reaped children's."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    used: dict[int, tuple[float, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parent[int(entry)] = int(fields[1])
        used[int(entry)] = (
            (int(fields[11]) + int(fields[12])) / ticks,
            (int(fields[13]) + int(fields[14])) / ticks,
        )
    return parent, used


def descendants(pid: int, parent: dict[int, int]) -> set[int]:
    """``pid`` and every process below it."""
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo += [c for c, pp in parent.items() if pp == p and c not in tree]
    return tree


def server_cpu(pid: int) -> float:
    """CPU seconds used so far by a process and its descendants (the server's workers)."""
    parent, used = _proc_table()
    return sum(used[p][0] for p in descendants(pid, parent) if p in used)


class Profiles:
    """The server's and the agent's thread profiles (bench/thread_profile.py), read
    around each end-to-end run."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.raw = root / "raw"
        self.raw.mkdir(parents=True, exist_ok=True)
        site = root / "site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(thread_profile.SITECUSTOMIZE)
        self.env = {"PYTHONPATH": str(site), "FSCHED_BENCH_PROFILE": str(self.raw)}

    def dump(self, pids: dict[str, int], label: str) -> None:
        for pid in pids.values():
            (self.raw / f"{pid}.mark").write_text(label)
        deadline = time.monotonic() + 30
        while waiting := [name for name, pid in pids.items() if (self.raw / f"{pid}.mark").exists()]:
            if time.monotonic() > deadline:
                print(f"    not profiled (no dump): {', '.join(waiting)}")
                for name in waiting:
                    (self.raw / f"{pids[name]}.mark").unlink(missing_ok=True)
                return
            time.sleep(0.05)

    def report(self, pids: dict[str, int], before: str, after: str, jobs: int) -> None:
        """Each thread's CPU per job between the two dumps; a pstats file per process."""
        for process, pid in pids.items():
            rows = []
            for path in sorted((self.raw / after).glob(f"{pid}-*.prof")):
                old = self.raw / before / path.name
                base = pstats.Stats(str(old)).stats if old.exists() else {}  # type: ignore[attr-defined]
                diff = thread_profile.delta(pstats.Stats(str(path)).stats, base)  # type: ignore[attr-defined]
                cpu = sum(v[2] for v in diff.values())
                if cpu > 0:
                    kept = self.raw / after / f"delta-{path.name}"
                    kept.write_bytes(marshal.dumps(diff))
                    rows.append((cpu, path.stem.split("-", 2)[2], str(kept)))
            out = self.root / f"{after.removeprefix('after-')}-{process}.prof"
            if rows:
                pstats.Stats(*(kept for _, _, kept in rows)).dump_stats(out)
            total = sum(cpu for cpu, _, _ in rows)
            print(f"    profiled {process}: {total / jobs * 1000:.2f} ms CPU a job ({out})")
            for cpu, name, _ in sorted(rows, reverse=True)[:8]:
                print(f"      {name:<40} {cpu / jobs * 1000:6.2f} ms")


class Bench:
    def __init__(self, cluster: Cluster, profiles: Profiles | None = None) -> None:
        self.cluster = cluster
        self.profiles = profiles
        self.submit_cpu_ms: list[float] = []
        # Per end-to-end figure: ms of CPU a job of the server, the agent, the jobs, and
        # of the server's own process (without its helpers).
        self.job_cpu_ms: dict[str, list[tuple[float, ...]]] = {}
        # Per end-to-end figure: the scheduler's passes (main, backfill) per 1,000 jobs and
        # the main pass's mean wall time (ms), from sdiag's counters.
        self.passes: dict[str, list[tuple[float, float, float]]] = {}
        # Per singles run: the share of its time (%) until the last submission was answered.
        self.submitted_share: list[float] = []
        creds = json.loads(Path(cluster.env["FSCHED_CLI_CONFIG"]).read_text())
        self.token = creds["token"]

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(  # noqa: S310 - loopback controller
            self.cluster.url + path,
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
            return json.loads(response.read() or b"{}")

    def active(self) -> int:
        return self.api("GET", "/api/jobs/?limit=1")["count"]

    def wait_idle(self, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while self.active():
            if time.monotonic() > deadline:
                raise RuntimeError("jobs did not finish")
            time.sleep(0.05)

    def pids(self) -> dict[str, int]:
        """The server, its helper processes (config/helpers.py) and the agent."""
        assert self.cluster.server is not None and self.cluster.agent is not None
        server = self.cluster.server.pid
        parent, _ = _proc_table()
        helpers = sorted(descendants(server, parent) - {server})
        return {"server": server, **{f"helper-{p}": p for p in helpers}, "agent": self.cluster.agent.pid}

    def pass_counters(self) -> tuple[int, int, int]:
        """sdiag's main passes, their summed wall time (us) and backfill passes so far."""
        diag = self.api("GET", "/api/diag/")
        main, backfill = diag["schedule"], diag["backfill"]
        return main["cycle_counter"], main["cycle_sum"], backfill["cycle_counter"]

    def cpu(self) -> tuple[float, float, float, float]:
        """CPU seconds so far of the server with its helpers, the agent itself, the
        agent's reaped children (the jobs), and the server's own process alone (where the
        passes, the agents' messages and the event loop run; its helpers take requests)."""
        assert self.cluster.server is not None and self.cluster.agent is not None
        parent, used = _proc_table()
        server = sum(used[p][0] for p in descendants(self.cluster.server.pid, parent) if p in used)
        return (server, *used[self.cluster.agent.pid], used[self.cluster.server.pid][0])

    def end_to_end(self, key: str, n: int, run: Callable[[int], float]) -> float:
        """``run(n)``, with the CPU per job it cost each process (and its profile)."""
        pids = self.pids()
        label = f"{key}-{len(self.job_cpu_ms.get(key, ())) + 1}"
        if self.profiles is not None:
            self.profiles.dump(pids, f"before-{label}")
        passes_before = self.pass_counters()
        before = self.cpu()
        rate = run(n)
        after = self.cpu()
        passes_after = self.pass_counters()
        per_job = tuple((a - b) / n * 1000 for a, b in zip(after, before, strict=True))
        self.job_cpu_ms.setdefault(key, []).append(per_job)
        main, main_us, backfill = (a - b for a, b in zip(passes_after, passes_before, strict=True))
        self.passes.setdefault(key, []).append(
            (main / n * 1000, backfill / n * 1000, main_us / main / 1000 if main else 0.0)
        )
        if self.profiles is not None:
            pids = self.pids()  # with the helpers started meanwhile
            self.profiles.dump(pids, f"after-{label}")
            print(f"  {label}: {rate:.1f} jobs/s")
            self.profiles.report(pids, f"before-{label}", f"after-{label}", n)
        return rate

    def cli(self, *args: str) -> None:
        subprocess.run([FSCHED, *args], env=self.cluster.env, check=True, capture_output=True)

    def array(self, n: int) -> float:
        start = time.perf_counter()
        self.cli("sbatch", "-p", PARTITION, "-a", f"1-{n}", "-o", "/dev/null", "--wrap=true")
        self.wait_idle()
        return n / (time.perf_counter() - start)

    def parallel(self, n: int, clients: int, body: dict) -> float:
        """Submit n jobs from `clients` threads, each an API client with its own HTTP/1.1
        connection (as a script using requests.Session or any HTTP library would keep);
        returns the elapsed seconds of submission."""
        per = [n // clients + (1 if i < n % clients else 0) for i in range(clients)]
        errors: list[BaseException] = []
        data = json.dumps(body).encode()
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        host, port = urllib.parse.urlsplit(self.cluster.url).netloc.rsplit(":", 1)

        def worker(count: int) -> None:
            connection = http.client.HTTPConnection(host, int(port), timeout=60)
            try:
                for _ in range(count):
                    connection.request("POST", "/api/jobs/", body=data, headers=headers)
                    response = connection.getresponse()
                    answer = response.read()
                    if response.status != 201:
                        raise RuntimeError(f"submission refused: {response.status} {answer[:200]!r}")
            except BaseException as exc:
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=worker, args=(c,)) for c in per]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return time.perf_counter() - start

    def singles(self, n: int) -> float:
        start = time.perf_counter()
        body = {"wrap": "true", "output": "/dev/null", "work_dir": "/tmp", "partition": PARTITION}
        submitted = self.parallel(n, 8, body)
        self.wait_idle()
        elapsed = time.perf_counter() - start
        # Whether the submissions or the runs that follow them hold the rate back.
        self.submitted_share.append(submitted / elapsed * 100)
        return n / elapsed

    def submit_rate(self, n: int) -> float:
        assert self.cluster.server is not None
        cpu = server_cpu(self.cluster.server.pid)
        elapsed = self.parallel(n, 8, {"wrap": "true", "hold": True, "work_dir": "/tmp"})
        self.submit_cpu_ms.append((server_cpu(self.cluster.server.pid) - cpu) / n * 1000)
        self.api(
            "POST",
            "/api/jobs/cancel/",
            {"state": "PENDING", "user": self.api("GET", "/api/whoami/")["username"]},
        )
        return n / elapsed

    def cli_latency(self, n: int) -> float:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            self.cli("sbatch", "--hold", "--wrap=true")
            times.append((time.perf_counter() - start) * 1000)
        self.api(
            "POST",
            "/api/jobs/cancel/",
            {"state": "PENDING", "user": self.api("GET", "/api/whoami/")["username"]},
        )
        return statistics.median(times)


@contextlib.contextmanager
def running(mode: str, urls: dict[str, str], port: int, profiles: Profiles | None = None) -> Iterator[Bench]:
    """A cluster in `mode` (urls: FSCHED_DATABASE_URL and FSCHED_REDIS_URL, empty for
    embedded) with its nodes up; stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="fsched-bench-") as tmp:
        state = Path(tmp)
        env = {"FSCHED_CLI_CONFIG": str(state / "cli.json"), "FSCHED_LOG_LEVEL": "WARNING", **urls}
        if profiles is not None:
            env.update(profiles.env)
        cluster = Cluster(
            state_dir=state,
            conf_dir=ROOT / "examples" / "demo",
            port=port,
            env=env,
            quiet=True,
            server_args=distributed.SERVER_ARGS if mode == "distributed" else (),
        )
        cluster.setup()
        celery: list[subprocess.Popen[bytes]] = []
        try:
            cluster.start_server()
            if mode == "distributed":
                celery = distributed.start_celery(cluster.env, state)
            # The agent logs at the server's level (FSCHED_LOG_LEVEL above): three INFO
            # lines a job would be a tenth of its CPU.
            cluster.start_agent(None, "--log-level", "WARNING")
            bench = Bench(cluster, profiles)
            deadline = time.monotonic() + 30
            # Every node the agent hosts comes up IDLE (CLOUD nodes stay powered down).
            while any(
                n["state"] != "IDLE" and "CLOUD" not in n["flags"]
                for n in bench.api("GET", "/api/nodes/?limit=1000")["results"]
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError("nodes did not come up")
                time.sleep(0.2)
            yield bench
        finally:
            cluster.stop()
            distributed.stop(celery)


def measure(benches: dict[str, Bench], args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """Every figure in every mode, the modes' runs taking turns (E, D, E, D, ...): this
    machine's speed drifts by half within minutes, and a mode measured after the other
    met another machine (measured: the reference loop 88 ms before, 146 ms after)."""
    figures: dict[str, dict[str, list[float]]] = {mode: {} for mode in benches}
    plan: list[tuple[str, str, int, Callable[[Bench], float]]] = [
        (
            "array",
            f"end-to-end, {args.jobs} jobs as one array (jobs/s)",
            args.runs,
            lambda b: b.end_to_end("array", args.jobs, b.array),
        ),
        (
            "singles",
            f"end-to-end, {args.jobs} single jobs, 8 API clients (jobs/s)",
            args.runs,
            lambda b: b.end_to_end("singles", args.jobs, b.singles),
        ),
        # Short and cheap: more runs, so that the machine's swings weigh less.
        (
            "submission",
            "API submission, 8 concurrent clients (jobs/s)",
            max(args.runs, 5),
            lambda b: b.submit_rate(1000),
        ),
        ("cli", "fsched sbatch --wrap=true, one call (ms)", args.runs, lambda b: b.cli_latency(30)),
    ]
    for key, name, runs, figure in plan:
        if args.only and key not in args.only:
            continue
        for _ in range(runs):
            for mode, bench in benches.items():
                figures[mode].setdefault(name, []).append(figure(bench))
    for mode, bench in benches.items():
        # Steadier than the rate (no client, no kernel), though still the machine's speed.
        if bench.submit_cpu_ms:
            figures[mode]["API submission: server CPU per job (ms)"] = bench.submit_cpu_ms
        for key, runs in bench.job_cpu_ms.items():
            for i, who in enumerate(("server", "agent", "jobs' processes", "server without its helpers")):
                figures[mode][f"{key}: CPU per job, {who} (ms)"] = [r[i] for r in runs]
        if bench.submitted_share:
            figures[mode]["singles: all submitted after (% of the run)"] = bench.submitted_share
        for key, runs in bench.passes.items():
            for i, what in enumerate(("main passes per 1,000 jobs", "backfill passes per 1,000 jobs")):
                figures[mode][f"{key}: {what}"] = [r[i] for r in runs]
            figures[mode][f"{key}: main pass, mean wall time (ms)"] = [r[2] for r in runs]
    return figures


def report(mode: str, figures: dict[str, list[float]]) -> None:
    print(f"  {mode}:")
    for name, values in figures.items():
        runs = ", ".join(f"{v:.1f}" for v in values)
        print(f"    {name:<62} {statistics.median(values):8.1f}   (runs: {runs})")


def table(embedded: dict[str, list[float]], dist: dict[str, list[float]]) -> None:
    """Side by side; ratio = distributed / embedded (above 1 is better for jobs/s, worse for
    ms), the median of each pair of back-to-back runs' ratios."""
    print(f"  {'figure':<62} {'embedded':>9} {'distributed':>12} {'ratio':>6}")
    for name, values in embedded.items():
        e, d = statistics.median(values), statistics.median(dist[name])
        ratio = statistics.median(b / a for a, b in zip(values, dist[name], strict=True))
        print(f"  {name:<62} {e:9.1f} {d:12.1f} {ratio:6.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.cluster_throughput")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument(
        "--mode",
        choices=("both", "embedded", "distributed"),
        default="both",
        help="both (the default) needs FSCHED_DATABASE_URL and FSCHED_REDIS_URL for its distributed half",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=("array", "singles", "submission", "cli"),
        help="measure only this figure (repeatable): a quicker run while working on one",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="profile every thread of the server and the agent (CPU time) into DIR",
    )
    args = parser.parse_args(argv)
    profiles = Profiles(Path(args.profile).resolve()) if args.profile else None
    db_url, redis_url = os.environ.get("FSCHED_DATABASE_URL", ""), os.environ.get("FSCHED_REDIS_URL", "")
    modes = ["embedded", "distributed"] if args.mode == "both" else [args.mode]
    if not (db_url and redis_url):
        if args.mode == "distributed":
            parser.error("distributed mode needs FSCHED_DATABASE_URL and FSCHED_REDIS_URL")
        modes = ["embedded"]
    print(f"fsched cluster benchmark ({', '.join(modes)}; partition batch: 64 CPUs), median of {args.runs}")
    print(f"  before: {reference.describe()}")
    with contextlib.ExitStack() as stack:
        benches: dict[str, Bench] = {}
        if "embedded" in modes:
            embedded_urls = {"FSCHED_DATABASE_URL": "", "FSCHED_REDIS_URL": ""}
            benches["embedded"] = stack.enter_context(running("embedded", embedded_urls, 18123, profiles))
        if "distributed" in modes:
            bench_db = stack.enter_context(distributed.fresh_database(db_url, f"fsched_bench_{os.getpid()}"))
            bench_redis = stack.enter_context(distributed.fresh_redis_db(redis_url))
            urls = {"FSCHED_DATABASE_URL": bench_db, "FSCHED_REDIS_URL": bench_redis}
            benches["distributed"] = stack.enter_context(running("distributed", urls, 18124, profiles))
        results = measure(benches, args)
    for mode, figures in results.items():
        report(mode, figures)
    print(f"  after: {reference.describe()}")
    if len(results) == 2:
        table(results["embedded"], results["distributed"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
