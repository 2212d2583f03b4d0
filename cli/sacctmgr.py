"""``fsched sacctmgr``: view and change the accounting policy, with Slurm's syntax.

    sacctmgr [-i] add account science Parent=root Description=Science
    sacctmgr [-i] add user bob Account=science DefaultAccount=science
    sacctmgr [-i] modify account name=science set GrpTRESMins=cpu=100000
    sacctmgr [-i] modify user where name=bob account=science set MaxJobs=4 GrpTRES=cpu=-1
    sacctmgr [-i] delete user bob where account=science
    sacctmgr show assoc [where user=bob] [format=Account,User,GrpTRESMins%20] [-P|-p] [-n]
    sacctmgr [-i] add user bob WCKeys=w1,w2 DefaultWCKey=w1     sacctmgr show wckey
    sacctmgr dump demo [file=demo.cfg]          sacctmgr load file=demo.cfg
    sacctmgr [-i] add coordinator account=science names=bob   (remove: the same words)

Changes go through the REST API (``/api/limits/...``) to the one service the admin and the
console use.  Without ``-i`` the change is first run as a preview (nothing kept), shown,
and committed only when the answer to Slurm's prompt is ``y``.
"""

from __future__ import annotations

import os
import sys

from cli.client import ApiError, Client, CliError, quote
from slurmwords.version import VERSION_LINE

PROMPT = "Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): "
_VERBS = {
    "add": "add",
    "create": "add",
    "modify": "modify",
    "update": "modify",
    "delete": "delete",
    "remove": "delete",
    "show": "show",
    "list": "show",
    "dump": "dump",
    "load": "load",
}
_ENTITIES = {
    "account": "account",
    "accounts": "account",
    "user": "user",
    "users": "user",
    "qos": "qos",
    "cluster": "cluster",
    "clusters": "cluster",
    "association": "association",
    "associations": "association",
    "assoc": "association",
    "tres": "tres",
    "wckey": "wckey",
    "wckeys": "wckey",
    "instance": "instance",
    "instances": "instance",
    "coordinator": "coordinator",
    "coordinators": "coordinator",
}
# sacctmgr's column widths; others are 10.  Values are right-aligned and cut with '+'.
_WIDTHS = {
    "Share": 9,
    "GrpJobs": 7,
    "GrpTRES": 13,
    "GrpSubmit": 9,
    "GrpWall": 11,
    "GrpTRESMins": 13,
    "MaxJobs": 7,
    "MaxTRES": 13,
    "MaxTRESPerNode": 14,
    "MaxSubmit": 9,
    "MaxWall": 11,
    "MaxTRESMins": 13,
    "QOS": 20,
    "Def QOS": 9,
    "GrpTRESRunMins": 13,
    "Flags": 11,
    "UsageFactor": 11,
    "Descr": 20,
    "Org": 20,
    "Def Acct": 10,
    "Name": 10,
    "MaxTRESPU": 13,
    "MaxTRESPA": 13,
    "TresDecayHalfLife": 17,
    "ParentName": 10,
    "GrpNodes": 8,
    "GrpCPUs": 8,
    "GrpMem": 7,
    "GrpCPUMins": 11,
    "MaxNodes": 8,
    "MaxCPUs": 8,
    "MaxCPUMins": 11,
}

USAGE = """usage: sacctmgr [-i] [-n] [-p|-P] <command> <entity> [specs]
  commands: add|create, modify|update, delete|remove, show|list, dump, load
  entities: account, user, qos, cluster, association, tres, wckey (show), instance (show),
            coordinator (add, remove: account=A names=U)
  -i, --immediate   commit changes without asking
  -n, --noheader    no header line
  -p, --parsable    '|' after every field;  -P, --parsable2  '|' between fields
"""


# sacctmgr's flags (src/sacctmgr/sacctmgr.c, getopt_long "hionpPQrsvV"); getopt takes
# them clustered (``-nP``, as scripts write them) and anywhere on the line.
_FLAG_LETTERS = {
    "i": "immediate",
    "n": "noheader",
    "p": "parsable",
    "P": "parsable2",
    "h": "help",
    "V": "version",
}
_FLAG_WORDS = {
    "--immediate": "immediate",
    "--noheader": "noheader",
    "--parsable": "parsable",
    "--parsable2": "parsable2",
    "--help": "help",
    "--usage": "help",
    "--version": "version",
}


class UsageError(Exception):
    """getopt's refusal, which sacctmgr prints with its "Try" line."""


def _split(args: list[str]) -> tuple[dict[str, bool], list[str]]:
    flags = {"immediate": False, "noheader": False, "parsable": False, "parsable2": False}
    rest = []
    for a in args:
        if a in _FLAG_WORDS:
            flags[_FLAG_WORDS[a]] = True
        elif a.startswith("--") and "=" not in a:
            raise UsageError(f"unrecognized option '{a}'")
        elif a.startswith("-") and not a.startswith("--") and len(a) > 1 and "=" not in a:
            for letter in a[1:]:
                if letter not in _FLAG_LETTERS:
                    raise UsageError(f"invalid option -- '{letter}'")
                flags[_FLAG_LETTERS[letter]] = True
        else:
            rest.append(a)
    return flags, rest


def _specs(words: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(bare names, where conditions, set options): ``where``/``set`` split the words; a
    word without ``=`` is a name."""
    names, where, options = [], [], []
    target = where
    for w in words:
        low = w.lower()
        if low == "where":
            target = where
            continue
        if low == "set":
            target = options
            continue
        if "=" not in w:
            names.append(w)
        elif target is where and low.startswith(("name=", "names=")):
            names.extend(v for v in w.split("=", 1)[1].split(",") if v)
        else:
            target.append(w)
    return names, where, options


def _print_lines(lines: list[str]) -> None:
    for line in lines:
        sys.stdout.write(line + "\n")


def _commit(client: Client, path: str, body: dict, immediate: bool) -> int:
    if immediate:
        answer = client.post(path, {**body, "commit": True})
        _print_lines(answer.get("lines", []))
        return 0
    preview = client.post(path, {**body, "commit": False})
    _print_lines(preview.get("lines", []))
    sys.stdout.write(PROMPT)
    sys.stdout.flush()
    reply = sys.stdin.readline().strip().lower()
    if reply not in ("y", "yes"):
        sys.stdout.write(" Changes Discarded\n")
        return 0
    client.post(path, {**body, "commit": True})
    return 0


def _columns(fmt: str, available: list[str], default: list[str]) -> list[tuple[str, int | None]]:
    if not fmt:
        return [(c, None) for c in default]
    by_key = {c.lower().replace(" ", ""): c for c in available}
    out = []
    for item in (i for i in fmt.split(",") if i):
        name, _, width = item.partition("%")
        column = by_key.get(name.lower().replace(" ", ""))
        if column is None:
            raise CliError(f"Unknown field '{name}'")
        out.append((column, int(width) if width.isdigit() else None))
    return out


def _table(columns: list[tuple[str, int | None]], rows: list[dict], flags: dict[str, bool]) -> str:
    lines = []
    parsable = flags["parsable"] or flags["parsable2"]
    tail = "|" if flags["parsable"] else ""
    if parsable:
        if not flags["noheader"]:
            lines.append("|".join(c for c, _ in columns) + tail)
        lines.extend("|".join(str(r.get(c, "")) for c, _ in columns) + tail for r in rows)
        return "\n".join(lines) + ("\n" if lines else "")
    widths = [w or _WIDTHS.get(c, 10) for c, w in columns]

    def cell(text: str, width: int) -> str:
        text = str(text)
        if len(text) > width:
            text = text[: width - 1] + "+"
        return text.rjust(width)

    if not flags["noheader"]:
        lines.append(" ".join(cell(c, w) for (c, _), w in zip(columns, widths, strict=True)))
        lines.append(" ".join("-" * w for w in widths))
    for r in rows:
        lines.append(" ".join(cell(r.get(c, ""), w) for (c, _), w in zip(columns, widths, strict=True)))
    return "\n".join(lines) + ("\n" if lines else "")


def _show(client: Client, entity: str, words: list[str], flags: dict[str, bool]) -> int:
    fmt = ""
    where = []
    withassoc = False
    for w in words:
        low = w.lower()
        if low == "withassoc" or (len(low) >= 5 and "withassoc".startswith(low)):
            withassoc = True
            continue
        if low in ("where", "tree"):
            continue
        if low.startswith("format="):
            fmt = w.split("=", 1)[1]
        elif "=" in w:
            where.append(w)
        else:
            where.append(f"name={w}")
    query = "&".join([f"where={quote(w)}" for w in where] + ["withassoc=1"] * withassoc)
    answer = client.get(f"/api/limits/show/{entity}/" + (f"?{query}" if query else ""))
    rows = answer.get("rows", [])
    default = answer.get("columns", [])
    available = list(dict.fromkeys([*default, *(k for r in rows for k in r)]))
    sys.stdout.write(_table(_columns(fmt, available, default), rows, flags))
    return 0


def _show_instances(client: Client, words: list[str], flags: dict[str, bool]) -> int:
    from datetime import datetime  # noqa: PLC0415 - only this command reads the clock

    from cli import instances  # noqa: PLC0415

    found, fmt = instances.fetch(client, words, datetime.now().astimezone())
    columns = _columns(fmt, list(instances.COLUMNS), [])
    widths = [(c, w or instances.WIDTHS.get(c)) for c, w in columns]
    sys.stdout.write(_table(widths, found, flags))
    return 0


def main(argv: list[str]) -> int:
    try:
        flags, words = _split(argv)
    except UsageError as exc:
        sys.stderr.write(f'sacctmgr: {exc}\nTry "sacctmgr --help" for more information\n')
        return 1
    if flags.get("version"):
        sys.stdout.write(VERSION_LINE)
        return 0
    if flags.get("help") or not words:
        sys.stdout.write(USAGE)
        return 0 if flags.get("help") else 1
    verb = _VERBS.get(words[0].lower())
    if verb is None:
        raise CliError(f"Unknown command '{words[0]}'")
    client = Client()
    try:
        if verb == "dump":
            return _dump(client, words[1:])
        if verb == "load":
            return _load(client, words[1:], flags)
        if len(words) < 2:
            raise CliError(f"{verb}: which entity? (account, user, qos, cluster, association)")
        entity = _ENTITIES.get(words[1].lower())
        if entity is None:
            raise CliError(f"Unknown entity '{words[1]}'")
        if verb == "show" and entity == "instance":
            return _show_instances(client, words[2:], flags)
        if verb == "show":
            return _show(client, entity, words[2:], flags)
        names, where, options = _specs(words[2:])
        if verb == "add":
            body = {"names": names, "options": where + options}
            return _commit(client, f"/api/limits/add/{entity}/", body, flags["immediate"])
        if verb == "modify":
            body = {"where": [f"name={','.join(names)}"] * bool(names) + where, "options": options}
            return _commit(client, f"/api/limits/modify/{entity}/", body, flags["immediate"])
        body = {"where": [f"name={','.join(names)}"] * bool(names) + where + options}
        return _commit(client, f"/api/limits/delete/{entity}/", body, flags["immediate"])
    except ApiError as exc:
        raise CliError(exc.message) from None


def _dump(client: Client, words: list[str]) -> int:
    cluster = next((w for w in words if "=" not in w), "")
    path = next((w.split("=", 1)[1] for w in words if w.lower().startswith("file=")), "")
    try:
        answer = client.get("/api/limits/dump/", {"cluster": cluster} if cluster else None)
    except ApiError as exc:
        # sacctmgr's own wording, indented by one space as it prints it.
        sys.stderr.write(f" {exc.message}\n")
        return 1
    text = answer.get("text", "")
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        sys.stdout.write(f"sacctmgr: Cluster {cluster or '(current)'} stored in {path}\n")
    else:
        sys.stdout.write(text)
    return 0


def _load(client: Client, words: list[str], flags: dict[str, bool]) -> int:
    path = next((w.split("=", 1)[1] for w in words if w.lower().startswith("file=")), "")
    path = path or next((w for w in words if "=" not in w), "")
    if not path:
        raise CliError("load: no file given (file=<path>)")
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror}") from None
    return _commit(client, "/api/limits/load/", {"text": text}, flags["immediate"])
