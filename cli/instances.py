"""``sacctmgr show instance``: the cloud instances nodes ran on (Slurm's power_save.html,
"Cloud Accounting"), from ``GET /api/power/instances/``.

Slurm's conditions and defaults: ``Nodes=``, ``InstanceId=``, ``InstanceType=``,
``Extra=``, ``Start=``, ``End=``, ``Clusters=``, ``Format=`` (names may be shortened as
sacctmgr allows); without ``Start=`` the records active since the start of the previous
day; columns ``Cluster,NodeName,Start,End,InstanceId,InstanceType,Extra`` by default.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from cli.client import Client, CliError, quote
from slurmwords.begin_time import parse_begin_time

DEFAULT_FORMAT = "Cluster,NodeName,Start,End,InstanceId,InstanceType,Extra"
COLUMNS = ("Cluster", "NodeName", "Start", "End", "InstanceId", "InstanceType", "Extra", "Duration")
WIDTHS = {"NodeName": 15, "Start": 19, "End": 19, "InstanceId": 20, "InstanceType": 20, "Extra": 20}
# sacctmgr's condition names and the shortest prefix each takes, in the order it tries them.
CONDITIONS = (
    ("Clusters", 2),
    ("End", 2),
    ("Extra", 2),
    ("Format", 1),
    ("InstanceId", 9),
    ("InstanceType", 9),
    ("Nodes", 1),
    ("Start", 4),
)


def _condition(key: str) -> str | None:
    low = key.lower()
    for name, shortest in CONDITIONS:
        if len(low) >= shortest and name.lower().startswith(low):
            return name
    return None


def _date(epoch: int) -> str:
    """A time as sacctmgr prints it (local time); 0, an instance still current, is Unknown."""
    return datetime.fromtimestamp(epoch).strftime("%Y-%m-%dT%H:%M:%S") if epoch else "Unknown"


def _duration(start: int, end: int, now: float) -> str:
    seconds = int((end or now) - start)
    days, rest = divmod(max(seconds, 0), 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def query(words: list[str], now: datetime) -> tuple[dict[str, str], list[str], list[str]]:
    """(API query, format columns, clusters) for the words after ``show instance``."""
    params: dict[str, str] = {}
    fmt = DEFAULT_FORMAT
    clusters: list[str] = []
    for word in words:
        if word.lower() in ("where", "set"):
            continue
        key, eq, value = word.partition("=")
        name = _condition(key) if eq else None
        if name is None:
            raise CliError(f" Unknown condition: {word}")
        if name == "Format":
            fmt = value
        elif name == "Clusters":
            clusters = [c for c in value.split(",") if c]
        elif name in ("Start", "End"):
            try:
                params[name.lower()] = str(int(parse_begin_time(value, now).timestamp()))
            except ValueError as exc:
                raise CliError(f" {exc}") from None
        else:
            params[{"Nodes": "nodes", "InstanceId": "instance_id", "InstanceType": "instance_type",
                    "Extra": "extra"}[name]] = value  # fmt: skip
    if "start" not in params:
        # Slurm's default: the start of the previous day.
        day = (now - timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
        params["start"] = str(int(day.timestamp()))
    columns = []
    by_key = {c.lower(): c for c in COLUMNS}
    for item in (i for i in fmt.split(",") if i):
        name, _, width = item.partition("%")
        column = by_key.get(name.lower())
        if column is None:
            raise CliError(f"Unknown field '{name}'")
        columns.append(column + (f"%{width}" if width else ""))
    return params, columns, clusters


def rows(instances: list[dict[str, Any]], now: float) -> list[dict[str, str]]:
    out = []
    for i in instances:
        start, end = int(i["time"]["time_start"]), int(i["time"]["time_end"])
        out.append(
            {
                "Cluster": i["cluster"],
                "NodeName": i["node_name"],
                "Start": _date(start),
                "End": _date(end),
                "InstanceId": i["instance_id"],
                "InstanceType": i["instance_type"],
                "Extra": i["extra"],
                "Duration": _duration(start, end, now),
            }
        )
    return out


def fetch(client: Client, words: list[str], now: datetime) -> tuple[list[dict[str, str]], str]:
    """The rows to print and the format string (``Column%width,...``)."""
    params, columns, clusters = query(words, now)
    path = "/api/power/instances/"
    if params:
        path += "?" + "&".join(f"{k}={quote(v)}" for k, v in params.items())
    answer = client.get(path)
    found = rows(answer.get("instances", []), now.timestamp())
    if clusters:
        wanted = {c.lower() for c in clusters}
        found = [r for r in found if r["Cluster"].lower() in wanted]
    return found, ",".join(columns)


__all__ = ["COLUMNS", "DEFAULT_FORMAT", "WIDTHS", "fetch", "query", "rows"]
