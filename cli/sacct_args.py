"""``sacct``'s command line, read as Slurm's getopt_long reads it (pure).

Unlike the other commands' options, sacct's list options add up when repeated
(``-j 1 -j 2,3`` asks for three jobs, ``-o jobid -o state`` prints two fields), which
``cli.fastargs`` and argparse's store do not do; and argparse would cost every poll of a
workflow tool its import.  So this small reader: ``-xVALUE``, ``-x VALUE``, clustered flags
(``-nXP``), ``--long=VALUE``, ``--long VALUE``, and a long option shortened to any prefix
that names one option.
"""

from __future__ import annotations

# flag letter or long name -> (dest, takes a value, adds up)
SHORT = {
    "a": ("allusers", False, False),
    "A": ("accounts", True, True),
    "b": ("brief", False, False),
    "B": ("batchscript", False, False),
    "D": ("duplicates", False, False),
    "e": ("helpformat", False, False),
    "E": ("endtime", True, False),
    "h": ("help", False, False),
    # -i/-I add up: each later range replaces the minimum, and the maximum only when it
    # names one (sacct's get_resource_arg_range writes into the same two numbers).
    "i": ("nnodes", True, True),
    "I": ("ncpus", True, True),
    "j": ("jobs", True, True),
    "k": ("timelimit_min", True, False),
    "K": ("timelimit_max", True, False),
    "l": ("long", False, False),
    "L": ("allclusters", False, False),
    "M": ("clusters", True, True),
    "n": ("noheader", False, False),
    "N": ("nodelist", True, False),
    "o": ("format", True, True),
    "p": ("parsable", False, False),
    "P": ("parsable2", False, False),
    "q": ("qos", True, True),
    "r": ("partition", True, True),
    "s": ("state", True, True),
    "S": ("starttime", True, False),
    "T": ("truncate", False, False),
    "u": ("user", True, True),
    "X": ("allocations", False, False),
}
LONG = {
    "accounts": "A",
    "allclusters": "L",
    "allocations": "X",
    "allusers": "a",
    "batch-script": "B",
    "brief": "b",
    "cluster": "M",
    "clusters": "M",
    "delimiter": ("delimiter", True, False),
    "duplicates": "D",
    "endtime": "E",
    "env-vars": ("envvars", False, False),
    "fields": "o",
    "format": "o",
    "help": "h",
    "helpformat": "e",
    "help-fields": "e",
    "jobs": "j",
    "json": ("json", False, False),
    "long": "l",
    "name": ("names", True, True),
    "ncpus": "I",
    "nnodes": "i",
    "nodelist": "N",
    "noheader": "n",
    "parsable": "p",
    "parsable2": "P",
    "partition": "r",
    "qos": "q",
    "starttime": "S",
    "state": "s",
    "timelimit-max": "K",
    "timelimit-min": "k",
    "truncate": "T",
    "uid": "u",
    "units": ("units", True, False),
    "usage": ("usage", False, False),
    "user": "u",
}


class ArgError(ValueError):
    """The line does not parse: the message is getopt's, as Slurm's commands print it."""


def _long(name: str) -> tuple[str, bool, bool]:
    if name in LONG:
        found = LONG[name]
    else:
        matches = {n: LONG[n] for n in LONG if n.startswith(name)}
        if len({str(v) for v in matches.values()}) != 1:
            if matches:
                names = " ".join(f"'--{n}'" for n in sorted(matches))
                raise ArgError(f"option '--{name}' is ambiguous; possibilities: {names}")
            raise ArgError(f"unrecognized option '--{name}'")
        found = next(iter(matches.values()))
    return SHORT[found] if isinstance(found, str) else found


def parse(argv: list[str]) -> dict:
    """The options as a dict: lists for the options that add up, the last value of the
    others, True for flags given."""
    out: dict = {
        dest: ([] if adds else None)
        for dest, _v, adds in [*SHORT.values(), *(v for v in LONG.values() if not isinstance(v, str))]
    }
    i = 0

    def store(spec: tuple[str, bool, bool], value: str | None) -> None:
        dest, _takes, adds = spec
        if adds:
            out[dest].append(value)
        else:
            out[dest] = True if value is None else value

    while i < len(argv):
        word = argv[i]
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            spec = _long(name)
            if spec[1]:
                if not eq:
                    i += 1
                    if i == len(argv):
                        raise ArgError(f"option '--{name}' requires an argument")
                    value = argv[i]
                store(spec, value)
            elif eq:
                raise ArgError(f"option '--{name}' doesn't allow an argument")
            else:
                store(spec, None)
        elif word.startswith("-") and len(word) > 1:
            at = 1
            while at < len(word):
                letter = word[at]
                if letter not in SHORT:
                    raise ArgError(f"invalid option -- '{letter}'")
                spec = SHORT[letter]
                if spec[1]:
                    value = word[at + 1 :]
                    if not value:
                        i += 1
                        if i == len(argv):
                            raise ArgError(f"option requires an argument -- '{letter}'")
                        value = argv[i]
                    store(spec, value)
                    break
                store(spec, None)
                at += 1
        else:
            raise ArgError(f"Unknown arguments: {word}")
        i += 1
    return out
