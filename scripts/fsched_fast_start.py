"""``VENV/bin/python -I scripts/fsched_fast_start.py``: after pip has installed VENV/bin/fsched
(scripts/fsched, with the interpreter alone on its first line), start it with ``python -S``
and write in it where this venv's ``site`` finds fsched's packages (scripts/fsched says
why); then compile the client commands' modules now rather than at their first run, which
may not be allowed to write there (a compute node's shared install). Run it again after the
checkout moves. ``-I``: neither the current directory nor this one may stand in for the
installed packages.
"""

from __future__ import annotations

import compileall
import os
import re
import sys
from pathlib import Path

SHEBANG = re.compile(r"#!\S*python[0-9.]*( .*)?")
PACKAGES = re.compile(r"^PACKAGES = .*$", re.MULTILINE)


def main() -> int:
    command = Path(sys.executable).parent / "fsched"
    first, rest = command.read_text(encoding="utf-8").split("\n", 1)
    if not SHEBANG.fullmatch(first):
        sys.stderr.write(f"{sys.argv[0]}: {command} does not start with '#!...python': left as it is\n")
        return 1
    import cli  # noqa: PLC0415 - found by this venv's site, which is the point

    packages = str(Path(cli.__file__).parent.parent)
    rest, count = PACKAGES.subn(lambda _match: f"PACKAGES = {packages!r}", rest)
    if count != 1:
        sys.stderr.write(f"{sys.argv[0]}: {command} has {count} PACKAGES lines, not one: left as it is\n")
        return 1
    # pip writes the interpreter alone; a second run replaces its own -S.
    new = command.with_name("fsched.new")
    new.write_text(f"{first.split(' ', 1)[0]} -S\n{rest}", encoding="utf-8")
    new.chmod(0o755)
    os.replace(new, command)
    ok = all([compileall.compile_dir(Path(packages) / name, quiet=1) for name in ("cli", "slurmwords")])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
