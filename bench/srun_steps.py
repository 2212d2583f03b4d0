"""``srun -n 64 true`` inside an allocation: wall time of whole srun processes (docs/steps.md).

A demo cluster on this machine (a real controller and agent) holds one job of 64 CPUs on
16 nodes of the ``batch`` partition; each run is one ``fsched srun --jobid J -n 64 true``,
from the process's start to its exit: the step's creation at the controller, its launch
on the 16 nodes' agents, the 64 tasks, their exits streamed back to srun. The figure is the
median of the runs (after one warm-up). Usage: ``python bench/srun_steps.py [RUNS]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.demo import Cluster  # noqa: E402 - the repository on the path first

FSCHED = str(Path(sys.executable).parent / "fsched")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(runs: int = 10) -> int:
    with tempfile.TemporaryDirectory(prefix="fsched-bench-srun-") as tmp:
        state = Path(tmp)
        env = {
            "FSCHED_CLI_CONFIG": str(state / "cli.json"),
            "FSCHED_DATABASE_URL": "",
            "FSCHED_REDIS_URL": "",
            "FSCHED_SCHED_INTERVAL": "1",
        }
        conf = ROOT / "examples" / "demo"
        cluster = Cluster(state_dir=state, conf_dir=conf, port=free_port(), env=env, quiet=True)
        cluster.setup()
        try:
            cluster.start_server()
            cluster.start_agent()
            run_env = {**os.environ, **cluster.env}

            def cli(*args: str) -> str:
                return subprocess.run([FSCHED, *args], env=run_env, capture_output=True, text=True,
                                      check=True, cwd=tmp, timeout=120).stdout  # fmt: skip

            deadline = time.monotonic() + 60
            job_id = 0
            while time.monotonic() < deadline:
                try:
                    job_id = int(cli("sbatch", "--parsable", "-p", "batch", "-N", "16", "-n", "64",
                                     "-o", "/dev/null", "--wrap", "sleep 3600"))  # fmt: skip
                    break
                except subprocess.CalledProcessError:
                    time.sleep(1)  # the nodes are still registering
            while json.loads(cli("squeue", "--json", "-j", str(job_id)))["jobs"][0]["state"] != "RUNNING":
                if time.monotonic() > deadline:
                    print("the allocation did not start", file=sys.stderr)
                    return 1
                time.sleep(0.5)
            times = []
            for i in range(runs + 1):
                start = time.perf_counter()
                subprocess.run([FSCHED, "srun", "--jobid", str(job_id), "-n", "64", "true"], env=run_env,
                               check=True, cwd=tmp, timeout=60)  # fmt: skip
                if i:  # the first run warms up the agent and the controller
                    times.append(time.perf_counter() - start)
            cli("scancel", str(job_id))
        except subprocess.SubprocessError:
            for log in ("agent.log", "server.log"):
                print(f"-- {log}", file=sys.stderr)
                print("".join((state / log).read_text().splitlines(True)[-30:]), file=sys.stderr)
            raise
        finally:
            cluster.stop()
    ms = [t * 1000 for t in times]
    print(f"srun -n 64 true inside a 64-CPU, 16-node allocation: median {statistics.median(ms):.0f} ms "
          f"(min {min(ms):.0f}, max {max(ms):.0f}, {len(ms)} runs)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
