"""squeue's ``-O``/``--Format``: comma-separated field names, each ``name[:[.][size][suffix]]``
(squeue(1)), read as the ``-o`` format letters they stand for.

As squeue reads them: a name is matched without regard to case; without ``:`` the field is
20 characters wide and left-justified; ``:.`` right-justifies; what follows the size is
printed after the field; fields are not otherwise separated.  Known: the names of fields
fsched's ``-o`` prints, and those of ``cli.squeue.LONG_ONLY`` (STDOUT, EXIT_CODE, ...),
which no ``-o`` letter prints; any other is reported, as squeue does, and prints only its
suffix.
"""

from __future__ import annotations

# squeue(1)'s -O names (lower case) -> the -o letter of the same field.
NAMES = {
    "account": "a",
    "contiguous": "O",
    "cores": "I",
    "corespec": "X",
    "groupid": "G",
    "groupname": "g",
    "mintmpdisk": "d",
    "sct": "z",
    "sockets": "H",
    "threads": "J",
    "userid": "U",
    "arrayjobid": "F",
    "arraytaskid": "K",
    "batchhost": "B",
    "command": "o",
    "comment": "k",
    "dependency": "E",
    "endtime": "e",
    "excnodes": "x",
    "feature": "f",
    "gres": "b",
    "jobarrayid": "i",
    "jobid": "A",
    "licenses": "W",
    "mincpus": "c",
    "minmemory": "m",
    "name": "j",
    "nice": "y",
    "nodelist": "N",
    "numcpus": "C",
    "numnodes": "D",
    "oversubscribe": "h",
    "partition": "P",
    "priority": "p",
    "prioritylong": "Q",
    "qos": "q",
    "reason": "r",
    "reasonlist": "R",
    "reqnodes": "n",
    "reservation": "v",
    "schednodes": "Y",
    "starttime": "S",
    "state": "T",
    "statecompact": "t",
    "submittime": "V",
    "timeleft": "L",
    "timelimit": "l",
    "timeused": "M",
    "tres-per-node": "b",
    "username": "u",
    "wckey": "w",
    "workdir": "Z",
}
DEFAULT_WIDTH = 20


def _long_only() -> dict:
    from cli.squeue import LONG_ONLY  # noqa: PLC0415 - squeue has loaded it already

    return LONG_ONLY


def to_format(spec: str, unknown: list[str] | None = None) -> str:
    """The ``-o`` format for an ``-O`` one.  A name squeue or fsched does not know:
    ValueError with squeue's message, or, given ``unknown``, added to it and only its
    suffix printed, as squeue's ``parse_long_format`` does (src/squeue/opts.c)."""
    if not spec:
        raise ValueError("Format long option lacks specification")
    out = []
    for token in spec.split(","):
        if not token:
            continue  # strtok_r skips empty tokens
        name, colon, rest = token.partition(":")
        letter = NAMES.get(name.lower())
        if letter is None and (long_only := _long_only().get(name.lower())):
            letter = long_only[0]
        if letter is None and unknown is not None:
            unknown.append(name)
            rest = rest[1:] if rest.startswith(".") else rest
            out.append(rest.lstrip("0123456789").replace("%", "%%"))
            continue
        if letter is None:
            raise ValueError(f"Invalid job format specification: {name}")
        if not colon:
            out.append(f"%{DEFAULT_WIDTH}{letter}")
            continue
        right = rest.startswith(".")
        rest = rest[1:] if right else rest
        digits = len(rest) - len(rest.lstrip("0123456789"))
        width, suffix = int(rest[:digits] or 0), rest[digits:]
        out.append(f"%{'.' if right else ''}{width or ''}{letter}{suffix.replace('%', '%%')}")
    return "".join(out)
