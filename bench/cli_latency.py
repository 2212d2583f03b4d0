"""Start-up latency of the ``fsched`` CLI: median wall and CPU time of whole processes.

Target (#18): one ``fsched sbatch --wrap=true`` within 15 ms including Python's own
start.  Cases, each run N times (default 30) after one warm-up:

* ``python -c pass``: the interpreter alone;
* ``python -S -c pass``: the interpreter without ``site``, as the installed command
  starts it (scripts/fsched);
* ``python -c 'import re'``: what pip's console-script wrapper cost every run
  before ``fsched`` became scripts/fsched (that wrapper imports ``re``), for comparison;
* ``sbatch --help`` / ``squeue --help``: argument parsing, no network;
* ``sbatch --wrap=true (refused)``: the whole submit path up to ``connect()``
  against a closed port (the command fails fast; no server time counted);
* ``sbatch --wrap=true (canned)`` / ``squeue (canned)``: the full path against
  a tiny in-process HTTP server that answers canned JSON at once, i.e. the
  CLI's share of a real submission without the controller's work;
* ``sbatch --wrap=true (canned, site)``: the same command under a plain ``python``
  (with ``site``), for comparison with the fast start.

With ``--instructions``, each case also runs once under valgrind's callgrind and the
instructions it executed are printed (millions): unlike time, the machine's other load
leaves them unchanged, so two branches compare on a busy machine.

Usage: ``.venv/bin/python bench/cli_latency.py [N] [--instructions]``.
"""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable

JOB = {
    "job_id": 1,
    "array_job_id": None,
    "array_task_id": None,
    "name": "wrap",
    "user": "bench",
    "partition": "debug",
    "state": "RUNNING",
    "state_compact": "R",
    "reason": "None",
    "min_nodes": 1,
    "time_limit": 60,
    "run_time": 5,
    "node_list": "node01",
}


class Canned(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(201, {"job_id": 1, "job_ids": [1], "array_job_id": None})

    def do_GET(self) -> None:
        self._answer(200, {"count": 1, "next": None, "previous": None, "results": [JOB]})

    def log_message(self, *args) -> None:
        pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def load_average() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall ms, CPU ms) of one run: the CPU the process used is steadier than its wall time
    when other work shares the machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu


def instructions(argv: list[str], env: dict) -> float | None:
    """Millions of instructions of one run, counted by callgrind; None without valgrind."""
    try:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
            env=env, cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        return None
    found = re.search(r"Collected : (\d+)", done.stderr)
    return int(found.group(1)) / 1e6 if found else None


def main() -> None:
    args = [arg for arg in sys.argv[1:] if arg != "--instructions"]
    runs = int(args[0]) if args else 30
    counted = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # As installed: bytecode cached (a dev shell's PYTHONDONTWRITEBYTECODE
    # would make every run recompile the cli modules, ~10 ms).
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    canned = {**base, "FSCHED_URL": f"http://127.0.0.1:{server.server_port}", "FSCHED_TOKEN": "x"}
    refused = {**base, "FSCHED_URL": f"http://127.0.0.1:{free_port()}", "FSCHED_TOKEN": "x"}
    # The installed command is what users run; `python -m` adds runpy (~2 ms).
    script = os.path.join(os.path.dirname(PY), "fsched")
    fsched = [script] if os.path.exists(script) else [PY, "-m", "cli.main"]
    print(f"command: {' '.join(fsched)}; load average before: {load_average()}")
    cases = [
        ("python -c pass", [PY, "-c", "pass"], canned),
        ("python -S -c pass", [PY, "-S", "-c", "pass"], canned),
        ("python -c 'import re'", [PY, "-c", "import re"], canned),
        ("sbatch --help", [*fsched, "sbatch", "--help"], canned),
        ("squeue --help", [*fsched, "squeue", "--help"], canned),
        ("sbatch --wrap=true (refused)", [*fsched, "sbatch", "--wrap=true"], refused),
        ("sbatch --wrap=true (canned)", [*fsched, "sbatch", "--wrap=true"], canned),
        ("squeue (canned)", [*fsched, "squeue"], canned),
    ]
    if fsched == [script]:
        cases.append(("sbatch --wrap=true (canned, site)", [PY, script, "sbatch", "--wrap=true"], canned))
    for name, argv, env in cases:  # warm-up: page cache and __pycache__
        timed(argv, env)
        if "--instructions" in sys.argv:
            counted[name] = instructions(argv, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _argv, _env in cases}
    for _ in range(runs):  # interleaved, so a busy neighbour weighs on every case alike
        for name, argv, env in cases:
            times[name].append(timed(argv, env))
    head = f"{'case':<36} {'median ms':>10} {'min ms':>8} {'CPU ms':>8}" + ("  M instr" if counted else "")
    print(f"{head}   (N={runs}; CPU: median user+sys)")
    for name, values in times.items():
        walls = [w for w, _ in values]
        cpu = statistics.median(c for _, c in values)
        line = f"{name:<36} {statistics.median(walls):>10.1f} {min(walls):>8.1f} {cpu:>8.1f}"
        if counted:
            line += f" {counted[name]:>8.1f}" if counted[name] is not None else "        -"
        print(line)
    print(f"load average after: {load_average()}")
    server.shutdown()


if __name__ == "__main__":
    main()
