"""Running a what-if: both configurations simulated on the same workload, side by side.

Each simulation is the simulator's own process (``python -m simulator run``, an argv list,
no shell): it holds its in-memory store and its virtual clock apart from the controller's.
The runner writes both configuration directories and the workload under the state
directory (private to the controller), starts both, copies their progress files into the
row about once a second (the page's progress bars read the row), and stores both reports.

Who runs it: a thread of the server process embedded, a Celery worker distributed
(``whatif.tasks``). A row is taken by one conditional update from ``queued`` to
``running``, so nothing runs twice; a ``running`` row whose runner stopped beating for
``STALE`` seconds (the process died) is queued again by :func:`requeue_stale`.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from whatif.models import WhatIf
from whatif.snapshot import write_dir

log = logging.getLogger("fsched.whatif")

STALE = 60.0
BEAT = 1.0
SAMPLE = Path(settings.BASE_DIR) / "examples" / "workloads" / "sample.swf"
ERROR_TAIL = 4000


def work_dir(pk: int) -> Path:
    return Path(settings.STATE_DIR) / "whatif" / str(pk)


def start(pk: int) -> None:
    """Run the what-if after the caller's commit, where this deployment runs work."""

    def go() -> None:
        if getattr(settings, "DISTRIBUTED", False):
            from whatif.tasks import run_whatif  # noqa: PLC0415 - Celery only where it runs

            run_whatif.delay(pk)
        else:
            threading.Thread(target=run, args=(pk,), name=f"whatif-{pk}", daemon=True).start()

    transaction.on_commit(go)


def requeue_stale() -> list[int]:
    """Queue again (and start) the running what-ifs whose runner stopped beating."""
    cutoff = (timezone.now() - timedelta(seconds=STALE)).timestamp()
    stale = [
        row.pk
        for row in WhatIf.objects.filter(state=WhatIf.RUNNING).only("pk", "progress")
        if float((row.progress or {}).get("beat", 0)) < cutoff
    ]
    for pk in stale:
        if WhatIf.objects.filter(pk=pk, state=WhatIf.RUNNING).update(state=WhatIf.QUEUED, progress={}):
            log.warning("what-if %s: its runner stopped; queued again", pk)
            start(pk)
    return stale


def _workload_file(row: WhatIf, base: Path) -> Path:
    if row.workload == "sample":
        return SAMPLE
    name = (
        "workload.json" if row.workload.startswith("history:") else "workload" + Path(row.workload).suffix[:8]
    )
    path = base / name
    path.write_text(row.workload_text, encoding="utf-8")
    return path


def _read_progress(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: data[k] for k in ("done", "total", "t") if isinstance(data.get(k), (int, float))}


def run(pk: int) -> str:
    """Run what-if ``pk`` if it is still queued; its final state."""
    if not WhatIf.objects.filter(pk=pk, state=WhatIf.QUEUED).update(
        state=WhatIf.RUNNING, progress={"beat": timezone.now().timestamp()}
    ):
        return "taken"
    row = WhatIf.objects.get(pk=pk)
    base = work_dir(pk)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(mode=0o700, parents=True)
    try:
        workload = _workload_file(row, base)
        procs = {}
        for side, files in (("a", row.files_a), ("b", row.files_b)):
            conf = write_dir(files, base / side / "conf")
            out = base / side / "out"
            err = (base / side / "stderr.txt").open("wb")
            argv = [
                sys.executable,
                "-m",
                "simulator",
                "run",
                "--conf",
                str(conf),
                "--workload",
                str(workload),
                "--out",
                str(out),
                "--progress",
                str(base / side / "progress.json"),
            ]
            procs[side] = (
                subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=settings.BASE_DIR
                ),
                err,
            )
        while any(p.poll() is None for p, _ in procs.values()):
            time.sleep(BEAT)
            progress = {side: _read_progress(base / side / "progress.json") for side in procs}
            WhatIf.objects.filter(pk=pk, state=WhatIf.RUNNING).update(
                progress={**progress, "beat": timezone.now().timestamp()}
            )
        reports, errors = {}, []
        for side, (proc, err) in procs.items():
            err.close()
            if proc.returncode != 0:
                tail = (base / side / "stderr.txt").read_bytes()[-ERROR_TAIL:].decode("utf-8", "replace")
                errors.append(
                    f"configuration {side.upper()}: the simulation exited with {proc.returncode}\n{tail}"
                )
                continue
            reports[side] = json.loads((base / side / "out" / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        errors, reports = [f"{type(exc).__name__}: {exc}"], {}
    state = WhatIf.FAILED if errors else WhatIf.DONE
    WhatIf.objects.filter(pk=pk).update(
        state=state,
        report_a=reports.get("a"),
        report_b=reports.get("b"),
        error="\n".join(errors),
        finished=timezone.now(),
        progress={},
    )
    return state
