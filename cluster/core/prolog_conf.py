"""The node-side Prolog and Epilog settings of ``slurm.conf``, read into one dataclass.

Pure: no Django, no clock. The controller's reader (cluster/core/slurmconf.py) calls the
parsers below for each key, so a bad value is a ``file:line`` error there; the agent and
the controller then build :class:`PrologConfig` from the checked options.

* ``Prolog``, ``Epilog`` (run as the agent's user, root on a real cluster) and
  ``TaskProlog``, ``TaskEpilog`` (run as the job's user): absolute paths, several
  separated by commas, as Slurm allows. A path may hold a glob (``/etc/slurm/prolog.d/*``):
  it is expanded when the program runs, in sorted order.
* ``PrologFlags``: Slurm's names, case-insensitive. ``Contain`` and ``ForceRequeueOnFail``
  imply ``Alloc`` (slurm.conf(5)); ``NoHold`` cannot be combined with ``Contain`` or
  ``X11``. ``X11`` and ``RunInJob`` need Slurm's extern step, which fsched has not: they
  are refused rather than silently ignored.
* ``PrologEpilogTimeout`` (seconds, both), ``PrologTimeout`` and ``EpilogTimeout`` (each
  overrides the common one): Slurm's default is to wait indefinitely.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Slurm's PrologFlags names, with the spelling slurm.conf(5) gives them.
KNOWN_FLAGS = ("Alloc", "Contain", "DeferBatch", "ForceRequeueOnFail", "NoHold", "RunInJob", "Serial", "X11")
# Flags that need the extern step (a container made at allocation that processes join).
UNSUPPORTED_FLAGS = {"RunInJob": "the extern step", "X11": "X11 forwarding"}
_IMPLIES = {"Contain": ("Alloc",), "ForceRequeueOnFail": ("Alloc",)}
_UNLIMITED = ("INFINITE", "UNLIMITED")
MAX_TIMEOUT = 65533  # Slurm keeps these in 16 bits; 65534 is its INFINITE


@dataclass(frozen=True)
class PrologConfig:
    prolog: tuple[str, ...] = ()
    epilog: tuple[str, ...] = ()
    task_prolog: tuple[str, ...] = ()
    task_epilog: tuple[str, ...] = ()
    flags: frozenset[str] = frozenset()
    prolog_timeout: int | None = None  # seconds; None: wait indefinitely
    epilog_timeout: int | None = None

    def flag(self, name: str) -> bool:
        return name in self.flags

    @property
    def any(self) -> bool:
        return bool(self.prolog or self.epilog or self.task_prolog or self.task_epilog)


def parse_programs(value: str) -> tuple[str, ...]:
    """``/a,/b`` → ("/a", "/b"); a relative path is refused (slurmd runs them with no
    search path and no fixed working directory)."""
    paths = tuple(p.strip() for p in value.split(",") if p.strip())
    for path in paths:
        if not path.startswith("/"):
            raise ValueError(f"{path}: must be an absolute path")
        if "\0" in path:
            raise ValueError("a path cannot hold a NUL character")
    return paths


def parse_flags(value: str) -> frozenset[str]:
    canon = {f.lower(): f for f in KNOWN_FLAGS}
    flags: set[str] = set()
    for word in (w.strip() for w in value.split(",")):
        if not word:
            continue
        name = canon.get(word.lower())
        if name is None:
            raise ValueError(f"invalid PrologFlags value {word} (one of {', '.join(KNOWN_FLAGS)})")
        if name in UNSUPPORTED_FLAGS:
            raise ValueError(f"{name}: not supported by fsched (it needs {UNSUPPORTED_FLAGS[name]})")
        flags.add(name)
        flags.update(_IMPLIES.get(name, ()))
    if "NoHold" in flags and "Contain" in flags:
        raise ValueError("NoHold cannot be combined with Contain")
    return frozenset(flags)


def parse_timeout(value: str) -> int | None:
    text = value.strip()
    if text.upper() in _UNLIMITED or text == "65534":
        return None
    if not text.isdigit() or len(text) > 6:
        raise ValueError("not a number of seconds")
    seconds = int(text)
    if not 1 <= seconds <= MAX_TIMEOUT:
        raise ValueError(f"must be from 1 to {MAX_TIMEOUT} seconds (or INFINITE)")
    return seconds


# Key -> parser, for the slurm.conf reader's checks.
PARSERS = {
    "Prolog": parse_programs,
    "Epilog": parse_programs,
    "TaskProlog": parse_programs,
    "TaskEpilog": parse_programs,
    "PrologFlags": parse_flags,
    "PrologEpilogTimeout": parse_timeout,
    "PrologTimeout": parse_timeout,
    "EpilogTimeout": parse_timeout,
}


def prolog_config(options: Mapping[str, str]) -> PrologConfig:
    """From slurm.conf's checked global options (SlurmConfig.options); ValueError if one is
    bad (the reader has reported it with its line already)."""
    lower = {str(k).lower(): str(v) for k, v in options.items()}

    def get(key: str) -> str | None:
        return lower.get(key.lower())

    def programs(key: str) -> tuple[str, ...]:
        value = get(key)
        return parse_programs(value) if value else ()

    common = get("PrologEpilogTimeout")
    both = parse_timeout(common) if common else None
    pro, epi = get("PrologTimeout"), get("EpilogTimeout")
    return PrologConfig(
        prolog=programs("Prolog"),
        epilog=programs("Epilog"),
        task_prolog=programs("TaskProlog"),
        task_epilog=programs("TaskEpilog"),
        flags=parse_flags(get("PrologFlags") or ""),
        prolog_timeout=parse_timeout(pro) if pro else both,
        epilog_timeout=parse_timeout(epi) if epi else both,
    )
