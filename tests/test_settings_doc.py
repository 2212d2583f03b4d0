"""docs/settings.md's table is the list of the environment variables fsched reads: every
FSCHED_ variable the code reads is in it, and every variable in it is read somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "cli", "cluster", "config", "hres", "limits", "load", "power", "reports")
# os.environ.get("X"), os.environ["X"], os.getenv("X"), env.get("X"), env["X"] and
# config.env's envbool("X") / envint / envfloat / envlevel: reads of the environment,
# not a Django setting that happens to share a variable's name (settings.FSCHED_...).
READ = re.compile(
    r"""(?:\benviron(?:\.get|\.setdefault|\.pop)?\s*[(\[]\s*|\bgetenv\s*\(\s*|\benv(?:bool|int|float|level|networks)\s*\(\s*"""
    r"""|\benv(?:\.get)?\s*[(\[]\s*)["'](FSCHED_[A-Z0-9_]+)["']"""
)
ROW = re.compile(r"^\| `(FSCHED_[A-Z0-9_]+)` \|", re.MULTILINE)


def read_by_code() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for match in READ.finditer(path.read_text(encoding="utf-8")):
                found.setdefault(match.group(1), set()).add(str(path.relative_to(ROOT)))
    return found


def in_table() -> list[str]:
    return ROW.findall((ROOT / "docs" / "settings.md").read_text(encoding="utf-8"))


def test_the_scan_finds_the_variables_it_should():
    code = read_by_code()
    # Read in each of the ways the scan knows: a scan that found nothing would pass below.
    assert {
        "FSCHED_DATABASE_URL",
        "FSCHED_HTTPS",
        "FSCHED_TOKEN",
        "FSCHED_HOST",
        "FSCHED_AGENT_FAULT",
    } <= set(code)
    assert len(code) >= 30


def test_every_variable_the_code_reads_is_in_the_table():
    missing = {name: sorted(files) for name, files in read_by_code().items() if name not in in_table()}
    assert not missing, f"add these to docs/settings.md's table: {missing}"


def test_every_variable_in_the_table_is_read_by_the_code():
    code = read_by_code()
    unread = [name for name in in_table() if name not in code]
    assert not unread, f"docs/settings.md lists variables nothing reads: {unread}"


def test_each_variable_has_one_row():
    names = in_table()
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
