"""The what-if's one operation: ask for a comparison (docs/whatif.md).

Configuration A is the cluster's configuration in force or a saved B; B is A with the
form's changes. B is checked as the controller checks a reconfigure (every extension's
check, ``file:line``) and its accounts file as ``sacctmgr load`` checks one, before the
row is stored: a bad value is a 400 with the reason and nothing is kept."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from cluster.core.slurmconf import ConfigError
from cluster.services.action_audit import action_audit_record
from cluster.services.configuration import config_check
from cluster.services.errors import PermissionDenied, ServiceError
from limits.dump import load_text
from simulator.workloads.joblist import job_list_json
from whatif import history, runner
from whatif.core.changes import ACCOUNTS, SLURM_CONF
from whatif.core.offer import make_b
from whatif.models import WhatIf
from whatif.snapshot import current_files, texts, with_texts, write_dir

MAX_UPLOAD = 20 << 20
MAX_RUNNING = 2
UPLOAD_SUFFIXES = (".swf", ".yaml", ".yml", ".json")


def base_files(base: str) -> dict[str, dict[str, object]]:
    """Configuration A: ``current`` (the files in force) or a saved B by name."""
    if base == "current":
        return current_files()
    row = WhatIf.objects.filter(name=base).exclude(name="").first()
    if row is None:
        raise ServiceError(f"base: no saved configuration named {base!r}")
    return row.files_b


def _check(files: dict[str, dict[str, object]], actor: AbstractBaseUser) -> None:
    scratch = Path(settings.STATE_DIR) / "whatif"
    scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        conf_dir = write_dir(files, Path(tmp) / "conf")
        try:
            config_check(conf_dir / SLURM_CONF)
        except ConfigError as exc:
            raise ServiceError(f"configuration B is refused:\n{_relative(str(exc), conf_dir)}") from None
        except OSError as exc:
            raise ServiceError(f"configuration B: {exc.strerror}") from None
    try:
        load_text(actor=actor, text=str(files.get(ACCOUNTS, {}).get("text", "")), commit=False)
    except ServiceError as exc:
        raise ServiceError(f"configuration B: {ACCOUNTS}: {exc}") from None


def _relative(message: str, conf_dir: Path) -> str:
    # The scratch directory's name means nothing to the administrator: file names as in A.
    return message.replace(str(conf_dir) + "/", "")


def _workload(workload: str, *, days: str, upload_name: str, upload: bytes | None) -> tuple[str, str]:
    if workload == "sample":
        if not runner.SAMPLE.is_file():
            raise ServiceError("workload: the sample workload is not installed")
        return "sample", ""
    if workload == "history":
        try:
            span = float(days)
        except ValueError:
            raise ServiceError(f"days: a number of days, not {days!r}") from None
        if not 0 < span <= 366:
            raise ServiceError("days: between 0 and 366")
        jobs = history.history_jobs(span, now=timezone.now())
        if not jobs:
            raise ServiceError(f"workload: no job ended in the last {days} days")
        return f"history:{days}", job_list_json(jobs)
    if workload == "upload":
        if upload is None:
            raise ServiceError("workload: choose a file to upload")
        if len(upload) > MAX_UPLOAD:
            raise ServiceError(f"workload: the file is larger than {MAX_UPLOAD >> 20} MB")
        suffix = Path(upload_name).suffix.lower()
        if suffix not in UPLOAD_SUFFIXES:
            raise ServiceError(
                f"workload: a file ending in {', '.join(UPLOAD_SUFFIXES)}, not {upload_name!r}"
            )
        try:
            return Path(upload_name).name[:200], upload.decode("utf-8")
        except UnicodeDecodeError:
            raise ServiceError("workload: the file is not UTF-8 text") from None
    raise ServiceError("workload: one of sample, history, upload")


def whatif_create(
    *,
    actor: AbstractBaseUser,
    base: str,
    posted: Mapping[str, str],
    workload: str,
    days: str = "7",
    upload_name: str = "",
    upload: bytes | None = None,
    name: str = "",
) -> WhatIf:
    """Store and start a comparison of A and B on one workload (administrators only)."""
    if not actor.is_staff:
        raise PermissionDenied("only an administrator runs what-if simulations")
    name = name.strip()
    if len(name) > 64 or any(not (c.isalnum() or c in "-_.") for c in name):
        raise ServiceError("name: up to 64 letters, digits, '-', '_' or '.'")
    if name and (name == "current" or WhatIf.objects.filter(name=name).exists()):
        raise ServiceError(f"name: {name!r} is taken")
    files_a = base_files(base)
    new, done, errors = make_b(texts(files_a), posted)
    if errors:
        raise ServiceError("\n".join(errors))
    files_b = with_texts(files_a, new)
    _check(files_b, actor)
    label, text = _workload(workload, days=days, upload_name=upload_name, upload=upload)
    with transaction.atomic():
        busy = WhatIf.objects.select_for_update().filter(state__in=(WhatIf.QUEUED, WhatIf.RUNNING))
        if len(busy.values_list("pk", flat=True)) >= MAX_RUNNING:
            raise ServiceError(f"{MAX_RUNNING} what-ifs are running already: try again when one has ended")
        row = WhatIf.objects.create(
            owner=actor,
            created=timezone.now(),
            name=name,
            base=base,
            files_a=files_a,
            files_b=files_b,
            changes=done,
            workload=label,
            workload_text=text,
        )
        action_audit_record(
            actor=actor,
            instance=row,
            action="whatif",
            changes={what: [before, after] for what, before, after in done},
        )
        runner.start(row.pk)
    return row
