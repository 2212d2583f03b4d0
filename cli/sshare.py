"""``fsched sshare``: fair-share and usage of the associations, as Slurm's sshare.

    sshare [-a] [-A accounts] [-u users] [-U] [-l] [-n] [-p|-P] [-o Account,User,GrpTRESMins,GrpTRESRaw]

Columns: Account, User, RawShares, NormShares, RawUsage, NormUsage, EffectvUsage,
FairShare, LevelFS, GrpTRESMins, GrpTRESRaw, TRESRunMins, Partition, Cluster
(``Name%width`` sets a width).  Without ``-a`` or ``-u`` the accounts and your own
associations are shown.
"""

from __future__ import annotations

import sys

from cli import clusters
from cli.client import ApiError, Client, CliError
from cli.fmt import make_parser

DEFAULT = "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"
LONG = (
    "Account,User,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,FairShare,LevelFS,"
    "GrpTRESMins,TRESRunMins"
)
WIDTHS = {
    "Account": 20,
    "User": 10,
    "RawShares": 10,
    "NormShares": 11,
    "RawUsage": 11,
    "NormUsage": 11,
    "EffectvUsage": 13,
    "FairShare": 10,
    "LevelFS": 10,
    "GrpTRESMins": 30,
    "GrpTRESRaw": 50,
    "TRESRunMins": 30,
    "Partition": 12,
    "Cluster": 10,
}
_BY_KEY = {k.lower(): k for k in WIDTHS}


def _columns(spec: str) -> list[tuple[str, int]]:
    out = []
    for item in (i.strip() for i in spec.split(",") if i.strip()):
        name, _, width = item.partition("%")
        column = _BY_KEY.get(name.lower())
        if column is None:
            raise CliError(f'Invalid field requested: "{name}"')
        out.append((column, int(width) if width.isdigit() else WIDTHS[column]))
    return out


def render(rows: list[dict], columns: list[tuple[str, int]], *, header: bool, sep: str | None) -> str:
    """sshare's table: Account left-aligned, the rest right-aligned; ``sep`` for -p/-P."""
    lines = []
    if sep is not None:
        tail = "|" if sep == "p" else ""
        if header:
            lines.append("|".join(c for c, _ in columns) + tail)
        lines.extend("|".join(str(r.get(c, "")) for c, _ in columns) + tail for r in rows)
    else:

        def cell(column: str, text: str, width: int) -> str:
            return text.ljust(width) if column == "Account" else text.rjust(width)

        if header:
            lines.append(" ".join(cell(c, c, w) for c, w in columns) + " ")
            lines.append(" ".join("-" * w for _, w in columns) + " ")
        for r in rows:
            lines.append(" ".join(cell(c, str(r.get(c, "")), w) for c, w in columns) + " ")
    return "\n".join(lines) + ("\n" if lines else "")


def main(argv: list[str]) -> int:
    parser = make_parser("sshare")
    parser.add_argument("-a", "--all", action="store_true", help="all users")
    parser.add_argument("-A", "--accounts", default="", help="accounts to show")
    parser.add_argument("-u", "--users", default="", help="users to show")
    parser.add_argument("-U", "--Users", action="store_true", help="only the users' lines")
    parser.add_argument("-o", "--format", default="", help="columns")
    parser.add_argument("-l", "--long", action="store_true", help="more columns")
    parser.add_argument("-n", "--noheader", action="store_true")
    parser.add_argument("-p", "--parsable", action="store_true")
    parser.add_argument("-P", "--parsable2", action="store_true")
    clusters.add_option(parser)
    args = parser.parse_args(argv)
    columns = _columns(args.format or (LONG if args.long else DEFAULT))
    params = {"accounts": args.accounts, "users": args.users}
    if args.all:
        params["all"] = "1"
    client = Client()
    if args.clusters:
        clusters.local_cluster(client, args.clusters, "sshare")
    try:
        rows = client.get("/api/limits/sshare/", {k: v for k, v in params.items() if v})
    except ApiError as exc:
        raise CliError(exc.message) from None
    sep = "p" if args.parsable else "P" if args.parsable2 else None
    lines = rows.get("rows", [])
    if args.Users:  # sshare's PRINT_USERS_ONLY (src/sshare/process.c): no account's line
        lines = [row for row in lines if row.get("User")]
    sys.stdout.write(render(lines, columns, header=not args.noheader, sep=sep))
    return 0
