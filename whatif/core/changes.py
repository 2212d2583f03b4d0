"""A what-if's changes applied to a copy of the configuration's files.

The files are a mapping of relative path to text (``slurm.conf``, its includes,
``resources.yaml``, ``accounts.cfg`` the ``sacctmgr dump`` of the accounts and QOS).
Three kinds of change, as an administrator asks them in the console's form:

- power saving keys of slurm.conf (``SuspendTime=``, ``ResumeTimeout=``...);
- the count of an HRES layer in resources.yaml;
- a limit of a QOS or of an account in the accounts file.

Each returns new files and leaves the given ones alone. Nothing here validates what the
live configuration check validates (the caller runs that check on the result): these
only find where a value goes, and refuse what they cannot place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import yaml

from limits.core import dump_syntax

# slurm.conf's power saving keys an administrator tries out (power_save's man page names),
# with Slurm's spelling.
POWER_KEYS = (
    "SuspendTime",
    "SuspendTimeout",
    "ResumeTimeout",
    "SuspendRate",
    "ResumeRate",
    "SuspendExcNodes",
    "SuspendExcParts",
    "SuspendExcStates",
)

# The limits the form offers, as ``sacctmgr dump`` spells them.
QOS_LIMITS = (
    "GrpTRES",
    "GrpJobs",
    "GrpSubmitJobs",
    "MaxTRESPerUser",
    "MaxJobsPerUser",
    "MaxSubmitJobsPerUser",
    "MaxWall",
)
ACCOUNT_LIMITS = (
    "GrpTRES",
    "GrpJobs",
    "GrpSubmitJobs",
    "MaxTRES",
    "MaxJobs",
    "MaxSubmitJobs",
    "MaxWall",
    "Fairshare",
)

SLURM_CONF = "slurm.conf"
RESOURCES = "resources.yaml"
ACCOUNTS = "accounts.cfg"

Files = Mapping[str, str]


class ChangeError(ValueError):
    """A change that cannot be placed, naming it."""


def _key_token(key: str) -> re.Pattern[str]:
    # slurm.conf keys are case-insensitive; a line may hold several Key=Value pairs.
    return re.compile(rf"(?i)(^|\s){re.escape(key)}\s*=\s*(\S*)")


def _is_record(line: str) -> bool:
    # NodeName=/PartitionName= lines carry per-record keys of the same names (a partition's
    # SuspendTime): a global key is never read from them.
    head = line.lstrip().lower()
    return head.startswith(("nodename", "partitionname", "nodeset", "downnodes", "frontendname"))


def conf_value(files: Files, key: str) -> str | None:
    """The value of a global slurm.conf key as written in any of the files, else None."""
    pattern = _key_token(key)
    for text in files.values():
        for line in text.splitlines():
            code = line.split("#", 1)[0]
            if _is_record(code):
                continue
            m = pattern.search(code)
            if m:
                return m.group(2)
    return None


def set_conf_key(files: Files, key: str, value: str) -> dict[str, str]:
    """``key`` set to ``value`` where it is written (slurm.conf or an include), appended to
    slurm.conf otherwise; an empty value removes the key (Slurm's default applies)."""
    if any(ch.isspace() for ch in value) or "#" in value:
        raise ChangeError(f"{key}: a value without spaces or '#': {value!r}")
    out = dict(files)
    pattern = _key_token(key)
    for name, text in files.items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            code, hash_, comment = line.partition("#")
            if _is_record(code) or not pattern.search(code):
                continue
            code = pattern.sub(lambda m: f"{m.group(1)}{key}={value}" if value else m.group(1), code, count=1)
            lines[i] = code.rstrip() + (f" #{comment}" if hash_ else "")
            out[name] = "\n".join(lines) + "\n"
            return out
    if value:
        if SLURM_CONF not in files:
            raise ChangeError(f"{key}: no {SLURM_CONF} in the configuration")
        out[SLURM_CONF] = files[SLURM_CONF].rstrip("\n") + f"\n{key}={value}\n"
    return out


def layer_counts(files: Files) -> list[tuple[str, str, int]]:
    """Every (resource, layer, count) of resources.yaml, in its order."""
    text = files.get(RESOURCES)
    if not text:
        return []
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    out = []
    for res in doc if isinstance(doc, list) else []:
        if not isinstance(res, dict):
            continue
        for layer in res.get("layers") or []:
            if isinstance(layer, dict) and isinstance(layer.get("count"), int):
                out.append((str(res.get("resource")), str(layer.get("layer_name")), layer["count"]))
    return out


def set_layer_count(files: Files, resource: str, layer: str, count: int) -> dict[str, str]:
    """The layer's ``count`` changed; the file is written again from its parsed form (its
    comments are not kept: the copy is for a simulation, not for the cluster)."""
    if count < 0:
        raise ChangeError(f"{resource}/{layer}: count must be 0 or more, not {count}")
    text = files.get(RESOURCES)
    if text is None:
        raise ChangeError(f"{resource}/{layer}: no {RESOURCES} in the configuration")
    doc = yaml.safe_load(text)
    for res in doc if isinstance(doc, list) else []:
        if isinstance(res, dict) and str(res.get("resource")) == resource:
            for entry in res.get("layers") or []:
                if isinstance(entry, dict) and str(entry.get("layer_name")) == layer:
                    entry["count"] = count
                    return {**files, RESOURCES: yaml.safe_dump(doc, sort_keys=False)}
    raise ChangeError(f"{resource}/{layer}: no such layer in {RESOURCES}")


def _limit_line(line: str) -> re.Match[str] | None:
    """A QOS or Account line of the dump (the kinds whose limits the form edits)."""
    m = dump_syntax.LINE.match(line)
    return m if m and m.group(1).lower() in ("qos", "account") else None


def dump_limits(files: Files) -> dict[tuple[str, str], dict[str, str]]:
    """The QOS' and accounts' options of the accounts file: (kind, name) -> {option: value}."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for line in (files.get(ACCOUNTS) or "").splitlines():
        m = _limit_line(line)
        if not m:
            continue
        opts = {}
        for opt in dump_syntax.split_options(m.group(3), keep_quotes=True):
            name, _, value = opt.partition("=")
            opts[name.strip().lower()] = value
        out[(m.group(1).upper() if m.group(1).lower() == "qos" else "Account", m.group(2))] = opts
    return out


def set_limit(files: Files, kind: str, name: str, option: str, value: str) -> dict[str, str]:
    """``option`` of the QOS or account ``name`` set to ``value`` in the accounts file
    (empty: removed, no limit)."""
    if ":" in value or "'" in value or any(ch.isspace() for ch in value):
        raise ChangeError(f"{kind} {name} {option}: a value without spaces, ':' or quotes: {value!r}")
    text = files.get(ACCOUNTS)
    if text is None:
        raise ChangeError(f"{kind} {name}: no {ACCOUNTS} in the configuration")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _limit_line(line)
        if not m or m.group(2) != name or m.group(1).lower() != kind.lower():
            continue
        opts = [
            o
            for o in dump_syntax.split_options(m.group(3), keep_quotes=True)
            if o.partition("=")[0].strip().lower() != option.lower()
        ]
        if value:
            opts.append(f"{option}={value}")
        lines[i] = ":".join([f"{m.group(1)} - '{name}'", *opts])
        return {**files, ACCOUNTS: "\n".join(lines) + "\n"}
    raise ChangeError(f"{kind} {name}: not in {ACCOUNTS}")
