"""sinfo's ``-O``/``--Format``: comma-separated field names, each ``name[:[.][size][suffix]]``
(sinfo(1)), read as the ``-o`` format letters they stand for.

As sinfo's ``_parse_long_format`` reads them (src/sinfo/opts.c): a name is matched
without regard to case; without ``:`` the field is 20 characters wide and left-justified;
``:.`` right-justifies; what follows the size is printed after the field.  A name sinfo
does not know is reported ("Invalid job format specification", sinfo's own words) and
prints nothing but its suffix, and sinfo goes on; so does a name of a field fsched has no
value for (Comment, Port, Reservation, Cluster ...).
"""

from __future__ import annotations

# sinfo(1)'s -O names (lower case) -> the -o letter of the same field, for the fields
# fsched prints.
NAMES = {
    "available": "a",
    "cores": "Y",
    "cpus": "c",
    "cpusload": "O",
    "cpusstate": "C",
    "defaulttime": "L",
    "disk": "d",
    "features": "f",
    "features_act": "b",
    "freemem": "e",
    "groups": "g",
    "gres": "G",
    "memory": "m",
    "nodeaddr": "o",
    "nodeai": "A",
    "nodeaiot": "F",
    "nodehost": "n",
    "nodelist": "N",
    "nodes": "D",
    "oversubscribe": "h",
    "partition": "P",
    "partitionname": "R",
    "priorityjobfactor": "I",
    "prioritytier": "p",
    "reason": "E",
    "root": "r",
    "share": "h",
    "size": "s",
    "socketcorethread": "z",
    "sockets": "X",
    "statecompact": "t",
    "statelong": "T",
    "threads": "Z",
    "time": "l",
    "timestamp": "H",
    "user": "u",
    "userlong": "U",
    "weight": "w",
}
# -O names with no -o letter in sinfo: each stands for a private field kind (a character no
# -o format uses), printed by cli.sinfo's LONG_ONLY_FIELDS.
LONG_ONLY = {
    "allocmem": "\ue000",
    "allocnodes": "\ue001",
    "maxcpuspernode": "\ue002",
    "preemptmode": "\ue003",
    "statecomplete": "\ue004",
    "version": "\ue005",
    "extra": "\ue006",
    "gresused": "\ue007",
}
NAMES.update(LONG_ONLY)
DEFAULT_WIDTH = 20


def to_format(spec: str) -> tuple[str, list[str]]:
    """The ``-o`` format for an ``-O`` one, and the names it could not take; ValueError
    for an empty one."""
    if not spec:
        raise ValueError("Format long option lacks specification")
    out, unknown = [], []
    for token in spec.split(","):
        if not token:
            continue  # strtok_r skips empty tokens
        name, colon, rest = token.partition(":")
        right = colon and rest.startswith(".")
        rest = rest[1:] if right else rest
        digits = len(rest) - len(rest.lstrip("0123456789"))
        width, suffix = (int(rest[:digits] or 0), rest[digits:]) if colon else (DEFAULT_WIDTH, "")
        suffix = suffix.replace("%", "%%")
        letter = NAMES.get(name.lower())
        if letter is None:
            unknown.append(name)
            out.append(suffix)
            continue
        out.append(f"%{'.' if right else ''}{width or ''}{letter}{suffix}")
    return "".join(out), unknown
