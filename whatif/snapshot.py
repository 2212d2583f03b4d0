"""The configuration a what-if starts from: the files of the configuration directory in
force, and the accounts and QOS as ``sacctmgr dump`` writes them (``accounts.cfg``).

Kept in the comparison's row, so that a saved configuration is the same files whatever
the cluster's configuration becomes later."""

from __future__ import annotations

import contextlib
import stat
from pathlib import Path

from django.conf import settings

from cluster.services.errors import ServiceError
from limits.dump import dump_text
from whatif.core.changes import ACCOUNTS

MAX_FILE = 1 << 20  # a configuration file larger than this is not one an administrator edits
MAX_FILES = 200


class SnapshotError(Exception):
    pass


def current_files(conf_dir: Path | None = None) -> dict[str, dict[str, object]]:
    """``{relative path: {"text", "mode"}}`` of the configuration directory (its
    subdirectories too: include files, power programs, gres files), plus the accounts."""
    root = Path(conf_dir or settings.CONF_DIR)
    out: dict[str, dict[str, object]] = {}
    for path in sorted(root.rglob("*")):
        if len(out) >= MAX_FILES:
            raise SnapshotError(f"{root}: more than {MAX_FILES} files")
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # binary or unreadable: no configuration file of a simulation
        out[str(path.relative_to(root))] = {"text": text, "mode": stat.S_IMODE(info.st_mode) & 0o755}
    # No accounting cluster yet: nothing to dump, the simulation has no limits.
    with contextlib.suppress(ServiceError):
        out[ACCOUNTS] = {"text": dump_text(), "mode": 0o644}
    return out


def texts(files: dict[str, dict[str, object]]) -> dict[str, str]:
    return {name: str(f["text"]) for name, f in files.items()}


def with_texts(files: dict[str, dict[str, object]], new: dict[str, str]) -> dict[str, dict[str, object]]:
    """``files`` with the texts of ``new`` (modes kept; a new file is 0644)."""
    return {
        name: {"text": text, "mode": files.get(name, {}).get("mode", 0o644)} for name, text in new.items()
    }


def write_dir(files: dict[str, dict[str, object]], target: Path) -> Path:
    """Write the files under ``target`` (a directory private to the controller)."""
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name, f in files.items():
        path = (target / name).resolve()
        if target.resolve() not in path.parents:
            raise SnapshotError(f"{name}: not inside the configuration directory")
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(str(f["text"]), encoding="utf-8")
        path.chmod(int(f.get("mode", 0o644)) & 0o755)
    return target
