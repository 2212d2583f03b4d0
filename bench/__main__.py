"""``make bench``: every benchmark, one after the other, each printing its figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = [
    ["-m", "bench.cluster_throughput"],
    [str(ROOT / "bench" / "cli_latency.py")],
    [str(ROOT / "bench" / "scheduler_pass.py")],
    ["-m", "bench.pass_scaling"],
    ["-m", "bench.submit_depth"],
    [str(ROOT / "bench" / "dependency_pass.py")],
    [str(ROOT / "bench" / "srun_steps.py")],
    [str(ROOT / "bench" / "hres_pass.py")],
    [str(ROOT / "bench" / "lua_plugin_pass.py")],
    [str(ROOT / "bench" / "combined_pass.py")],
    [str(ROOT / "bench" / "console_scale.py")],
    ["-m", "bench.scale_throughput"],
    [str(ROOT / "bench" / "simulator_speed.py")],
]


def main() -> int:
    status = 0
    for args in SCRIPTS:
        print(f"\n== {' '.join(args)}", flush=True)
        status |= subprocess.run([sys.executable, *args], cwd=ROOT, check=False).returncode
    return status


if __name__ == "__main__":
    raise SystemExit(main())
