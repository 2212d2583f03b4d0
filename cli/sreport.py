"""``fsched sreport``: reports from the rollup tables, laid out as Slurm's sreport.

    sreport [-n] [-p|-P] [-t Minutes|Hours|Seconds|Percent|MinPer|HourPer|SecPer] [-T tres]
            cluster Utilization | AccountUtilizationByUser | UserUtilizationByAccount
            user TopUsage | job SizesByAccount
            [start=TIME] [end=TIME] [accounts=A,B] [users=U,V] [TopCount=N] [Group]
            [grouping=50,250,500,1000] [PrintJobCount] [FlatView]

As sreport: the range defaults to yesterday, its start is rounded down and its end up to
whole hours; the usage columns widen with their largest figure; ``-p``/``-P`` print ``|``
delimited lines, ``-n`` leaves out the title block and the column headers.  Energy is not
measured by fsched, so its column shows 0, as sreport shows it for a cluster without
energy accounting.  Proper names come from the local password database, as sreport's do.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cli.client import ApiError, Client, CliError

RULE = "-" * 80
TIME_FORMATS = {  # name: (unit seconds, with percentage, words after "Usage reported in")
    "secper": (1, True, "Seconds/Percentage of Total"),
    "minper": (60, True, "Minutes/Percentage of Total"),
    "hourper": (3600, True, "Hours/Percentage of Total"),
    "seconds": (1, False, "Seconds"),
    "minutes": (60, False, "Minutes"),
    "hours": (3600, False, "Hours"),
    "percent": (0, True, "Percentage of Total"),
}
REPORTS = {
    "cluster": {
        "utilization": "utilization",
        "accountutilizationbyuser": "account_by_user",
        "userutilizationbyaccount": "user_by_account",
    },
    "user": {"topusage": "top_usage"},
    "job": {"sizesbyaccount": "sizes_by_account"},
}
USAGE = (
    "Usage: sreport [options] [command]\n"
    "  Valid options are:\n"
    "    -h or --help: this message\n"
    "    -n or --noheader: no header lines\n"
    "    -p or --parsable: '|' after each field\n"
    "    -P or --parsable2: '|' between fields\n"
    "    -t <time_format>: Minutes (the default), Hours, Seconds, Percent, MinPer, HourPer, SecPer\n"
    "    -T or --tres <tres_names>: the TRES to report (cpu by default; ALL for all)\n"
    "  Valid commands are:\n"
    "    cluster Utilization|AccountUtilizationByUser|UserUtilizationByAccount\n"
    "    user TopUsage\n"
    "    job SizesByAccount\n"
    "  with start=TIME end=TIME accounts=A,B users=U,V TopCount=N\n"
)


class TimeFormat:
    """sreport's ``-t``: how a figure in seconds is printed (sreport_get_time_str)."""

    def __init__(self, text: str = "Minutes") -> None:
        low = text.lower()
        # Slurm's order of tests: the *Per forms first (six letters at least), then the rest
        # by any prefix.
        name = next(
            (n for n in ("secper", "minper", "hourper") if len(low) >= 6 and n.startswith(low)),
            None,
        ) or next((n for n in ("seconds", "minutes", "hours", "percent") if low and n.startswith(low)), None)
        if name is None:
            raise CliError(f"unknown time format {text}")
        self.unit, self.per, self.words = TIME_FORMATS[name]
        self.percent_only = name == "percent"

    def __call__(self, value: float, total: float) -> str:
        secs = round(value)
        pct = secs / (total or 1) * 100
        if self.percent_only:
            return f"{pct:.2f}%"
        amount = str(secs) if self.unit == 1 else f"{secs / self.unit:.0f}"
        return f"{amount}({pct:.2f}%)" if self.per else amount


@dataclass
class Field:
    name: str
    width: int  # negative: left-aligned


def usage_width(largest: float, fmt: TimeFormat) -> int:
    """sreport_set_usage_col_width: 8 characters up to 99,999,999 seconds, one more per digit
    beyond, and 9 more for the percentage."""
    width, order, number = 8, 10**8, round(largest)
    while order < 10**25 and number >= order:
        width += 1
        order *= 10
    return width + (9 if fmt.per and not fmt.percent_only else 0)


def cell(field: Field, text: str | None, parsable: str | None, last: bool) -> str:
    """print_fields_str: cut with a ``+`` when too long, right-aligned unless the width is
    negative; ``|`` after each value in -p, between values in -P."""
    if parsable:
        value = text or ""
        return value if (parsable == "P" and last) else value + "|"
    width = abs(field.width)
    value = " " if text is None else text
    if text is not None and len(text) > width:
        value = text[: width - 1] + "+"
    value = value[:width]
    return (value.rjust(width) if field.width > 0 else value.ljust(width)) + " "


def table(
    fields: Sequence[Field], rows: Sequence[Sequence[str | None]], *, parsable: str | None, header: bool
) -> str:
    out = []
    if header:
        if parsable:
            out.append("".join(cell(f, f.name, parsable, i == len(fields) - 1) for i, f in enumerate(fields)))
        else:
            out.append("".join(cell(f, f.name[: abs(f.width)], None, False) for f in fields))
            out.append("".join("-" * abs(f.width) + " " for f in fields))
    for row in rows:
        out.append(
            "".join(
                cell(f, v, parsable, i == len(fields) - 1)
                for i, (f, v) in enumerate(zip(fields, row, strict=True))
            )
        )
    return "".join(line + "\n" for line in out)


def slurm_time(epoch: int) -> str:
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%dT%H:%M:%S")


def title(first: str, data: dict, second: str) -> str:
    span = f"{slurm_time(data['start'])} - {slurm_time(data['end'] - 1)}"
    return f"{RULE}\n{first.format(span=span, secs=data['end'] - data['start'])}\n{second}\n{RULE}\n"


def usage_words(fmt: TimeFormat, tres_given: bool) -> str:
    if fmt.percent_only:
        return f"Usage reported in {fmt.words}"
    return f"Usage reported in {'TRES' if tres_given else 'CPU'} {fmt.words}"


def proper_name(login: str) -> str | None:
    """The first comma field of the user's GECOS, as sreport prints it (None: unknown)."""
    if not login:
        return None
    try:
        import pwd  # noqa: PLC0415 - POSIX only, and only this column needs it

        gecos = pwd.getpwnam(login).pw_gecos
    except (KeyError, ImportError):
        return None
    return gecos.split(",")[0]


# ---------------------------------------------------------------------------- the reports


def render_utilization(
    data: dict, fmt: TimeFormat, *, tres_given: bool, parsable: str | None, header: bool
) -> str:
    parts = (
        ("Allocated", "alloc"),
        ("Down", "down"),
        ("PLND Down", "pdown"),
        ("Idle", "idle"),
        ("Planned", "plan"),
    )
    rows = data["rows"]
    fields = [Field("Cluster", 9)]
    if tres_given:
        fields.append(Field("TRES Name", 14))
    for name, key in parts:
        fields.append(Field(name, usage_width(max((r[key] for r in rows), default=0), fmt)))
    fields.append(Field("Reported", usage_width(max((r["reported"] for r in rows), default=0), fmt)))
    secs = data["end"] - data["start"]
    lines = []
    for r in rows:
        line: list[str | None] = [data["cluster"]]
        if tres_given:
            line.append(r["tres"])
        line += [fmt(r[key], r["reported"]) for _, key in parts]
        line.append(fmt(r["reported"], secs * r["count"]))
        lines.append(line)
    head = title("Cluster Utilization {span}", data, usage_words(fmt, tres_given)) if header else ""
    return head + table(fields, lines, parsable=parsable, header=header)


def _assoc_report(
    data: dict,
    fmt: TimeFormat,
    columns: Sequence[tuple[str, int, Callable[[dict], str | None]]],
    heading: str,
    *,
    tres_given: bool,
    parsable: str | None,
    header: bool,
    largest: float,
) -> str:
    fields = [Field(n, w) for n, w, _ in columns]
    if tres_given:
        fields.append(Field("TRES Name", 14))
    fields.append(Field("Used", usage_width(largest, fmt)))
    if not tres_given:
        fields.append(Field("Energy", usage_width(0, fmt)))
    lines = []
    for r in data["rows"]:
        for tres in data["tres"]:
            line = [data["cluster"] if n == "Cluster" else get(r) for n, _, get in columns]
            if tres_given:
                line.append(tres)
            line.append(fmt(r["used"][tres], data["reported"][tres]))
            if not tres_given:
                line.append(fmt(0, 0))
            lines.append(line)
    head = title(heading, data, usage_words(fmt, tres_given)) if header else ""
    return head + table(fields, lines, parsable=parsable, header=header)


def _largest(rows: Sequence[dict], tres: Sequence[str]) -> float:
    return max((r["used"][t] for r in rows for t in tres), default=0.0)


def render_account_by_user(data: dict, fmt: TimeFormat, **kw: object) -> str:
    columns = (
        ("Cluster", 9, lambda r: None),
        ("Account", 15, lambda r: r["account"]),
        ("Login", 9, lambda r: r["user"] or None),
        ("Proper Name", 15, lambda r: proper_name(r["user"])),
    )
    # The first row (root, the whole cluster) is the largest, as sreport sizes it.
    largest = _largest(data["rows"][:1], data["tres"] if kw["tres_given"] else ["cpu"])
    return _assoc_report(
        data, fmt, columns, "Cluster/Account/User Utilization {span} ({secs} secs)", largest=largest, **kw
    )  # type: ignore[arg-type]


def render_user_by_account(data: dict, fmt: TimeFormat, **kw: object) -> str:
    columns = (
        ("Cluster", 9, lambda r: None),
        ("Login", 9, lambda r: r["user"]),
        ("Proper Name", 15, lambda r: proper_name(r["user"])),
        ("Account", 15, lambda r: r["account"]),
    )
    largest = _largest(data["rows"][:1], data["tres"] if kw["tres_given"] else ["cpu"])
    return _assoc_report(
        data, fmt, columns, "Cluster/User/Account Utilization {span} ({secs} secs)", largest=largest, **kw
    )  # type: ignore[arg-type]


def render_top_usage(data: dict, fmt: TimeFormat, **kw: object) -> str:
    columns = (
        ("Cluster", 9, lambda r: None),
        ("Login", 9, lambda r: r["user"]),
        ("Proper Name", 15, lambda r: proper_name(r["user"])),
        ("Account", 15, lambda r: r["account"]),
    )
    top = data.get("top", 10)
    heading = ("Top ALL" if not top else f"Top {top}") + " Users {span} ({secs} secs)"
    largest = _largest(data["rows"][:1], data["tres"] if kw["tres_given"] else ["cpu"])
    return _assoc_report(data, fmt, columns, heading, largest=largest, **kw)  # type: ignore[arg-type]


def render_sizes(
    data: dict, fmt: TimeFormat, *, job_count: bool, parsable: str | None, header: bool, **_: object
) -> str:
    lows = data["lows"]
    names = [f"{lo}-{hi - 1} CPUs" for lo, hi in itertools.pairwise(lows)] + [f">= {lows[-1]} CPUs"]
    width = 20 if fmt.per and not fmt.percent_only else 13
    fields = [Field("Cluster", 9), Field("Account", 9), *(Field(n, width) for n in names)]
    fields += [Field("Total Count", 11), Field("% of cluster", 12)]
    key = "jobs" if job_count else "secs"
    cluster_total = sum(sum(r[key]) for r in data["rows"])
    percent = TimeFormat("Percent")
    lines = []
    for r in data["rows"]:
        total = sum(r[key])
        if job_count:
            cells = [str(v) for v in r["jobs"]] + [str(total)]
        else:
            cells = [fmt(v, total) for v in r["secs"]] + [fmt(total, 0)]
        lines.append([data["cluster"], r["account"], *cells, percent(total, cluster_total)])
    head = ""
    if header:
        unit = "Units are in number of jobs ran" if job_count else f"Time reported in {fmt.words}"
        head = title("Job Sizes {span} ({secs} secs)", data, unit)
    return head + table(fields, lines, parsable=parsable, header=header)


RENDER: dict[str, Callable[..., str]] = {
    "utilization": render_utilization,
    "account_by_user": render_account_by_user,
    "user_by_account": render_user_by_account,
    "top_usage": render_top_usage,
    "sizes_by_account": render_sizes,
}


def render(report: str, data: dict, fmt: TimeFormat, *, job_count: bool = False, **kw: object) -> str:
    if report == "sizes_by_account":
        kw["job_count"] = job_count
    return RENDER[report](data, fmt, **kw)


# ---------------------------------------------------------------------------- the command line


@dataclass
class Options:
    parsable: str | None = None
    header: bool = True
    time_format: str = "Minutes"
    tres: str = ""


def split_options(argv: Sequence[str]) -> tuple[Options, list[str]]:
    """sreport's options, which may come anywhere (getopt permutes), and the other words."""
    opts, words = Options(), []
    it = iter(argv)
    for arg in it:
        if arg in ("-P", "--parsable2"):
            opts.parsable = "P"
        elif arg in ("-p", "--parsable"):
            opts.parsable = "p"
        elif arg in ("-n", "--noheader"):
            opts.header = False
        elif arg in ("-t", "-T", "--tres"):
            value = next(it, None)
            if value is None:
                raise CliError(f"option requires an argument -- '{arg.lstrip('-')}'")
            if arg == "-t":
                opts.time_format = value
            else:
                opts.tres = value
        elif arg.startswith("--tres="):
            opts.tres = arg.split("=", 1)[1]
        elif arg.startswith("-t") and len(arg) > 2:
            opts.time_format = arg[2:]
        elif arg.startswith("-T") and len(arg) > 2:
            opts.tres = arg[2:]
        elif arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            raise SystemExit(0)
        elif arg.startswith("--"):
            raise CliError(f"unrecognized option '{arg}'\n{USAGE.rstrip()}")
        elif arg.startswith("-") and arg != "-":
            _short_flags(arg, opts)
        else:
            words.append(arg)
    return opts, words


def _short_flags(arg: str, opts: Options) -> None:
    """Flags clustered as getopt takes them (``-nP``, ``-nPt hours``'s first part): n, p, P
    and h; t and T only alone (their value follows them in the same word or the next)."""
    for letter in arg[1:]:
        if letter == "n":
            opts.header = False
        elif letter in "pP":
            opts.parsable = letter
        elif letter == "h":
            sys.stdout.write(USAGE)
            raise SystemExit(0)
        else:
            raise CliError(f"invalid option -- '{letter}'\n{USAGE.rstrip()}")


def which_report(words: Sequence[str]) -> str:
    if len(words) < 2:
        raise CliError(f"too few arguments for a report\n{USAGE.rstrip()}")
    kind = next((k for k in REPORTS if k.startswith(words[0].lower())), None)
    if kind is None:
        raise CliError(f"invalid keyword: {words[0]}")
    name = words[1].lower()
    found = [v for k, v in REPORTS[kind].items() if len(name) >= 2 and k.startswith(name)]
    if len(found) != 1:
        valid = ", ".join(
            f'"{k}"' for k in ("Utilization", "AccountUtilizationByUser", "UserUtilizationByAccount")
        )
        names = {"cluster": valid, "user": '"TopUsage"', "job": '"SizesByAccount"'}[kind]
        raise CliError(f"Not valid report {words[1]}\nValid {kind} reports are, {names}")
    return found[0]


CONDITIONS = {  # prefix: (API parameter, needs a value)
    "start": ("start", True),
    "end": ("end", True),
    "accounts": ("accounts", True),
    "acct": ("accounts", True),
    "users": ("users", True),
    "topcount": ("top", True),
    "grouping": ("grouping", True),
    "group": ("group", False),
    "printjobcount": ("job_count", False),
    "flatview": ("flat", False),
}


def conditions(words: Sequence[str], now: datetime) -> dict[str, str]:
    from slurmwords.begin_time import parse_begin_time  # noqa: PLC0415 - its regexes cost every command

    out: dict[str, str] = {}
    for word in words:
        key, eq, value = word.partition("=")
        match = [k for k in CONDITIONS if k.startswith(key.lower()) and len(key) >= 1]
        # An exact name wins over a longer one it begins (Group and grouping=).
        exact = [k for k in match if k == key.lower()]
        name = exact[0] if exact else (match[0] if len(match) == 1 else None)
        if name is None or CONDITIONS[name][1] != bool(eq):
            raise CliError(f" Unknown condition: {word}")
        param = CONDITIONS[name][0]
        if param in ("start", "end"):
            try:
                moment = parse_begin_time(value, now)
            except ValueError:
                raise CliError(f"Invalid time specification: {value}") from None
            out[param] = str(int(moment.timestamp()))
        elif not eq:
            out[param] = "1"
        else:
            out[param] = value
    if "start" not in out or "end" not in out:
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        out.setdefault("end", str(int(midnight.timestamp())))
        yesterday = (midnight - timedelta(hours=12)).replace(hour=0)
        out.setdefault("start", str(int(yesterday.timestamp())))
    return out


def main(argv: list[str]) -> int:
    opts, words = split_options(argv)
    report = which_report(words)
    fmt = TimeFormat(opts.time_format)
    params = conditions(words[2:], datetime.now().astimezone())
    job_count = params.pop("job_count", "") == "1"
    if opts.tres:
        params["tres"] = opts.tres
    client = Client()
    try:
        data = client.get(f"/api/reports/sreport/{report}/", params)
    except ApiError as exc:
        raise CliError(exc.message) from None
    sys.stdout.write(
        render(
            report,
            data,  # type: ignore[arg-type]
            fmt,
            tres_given=bool(opts.tres),
            parsable=opts.parsable,
            header=opts.header,
            job_count=job_count,
        )
    )
    return 0
