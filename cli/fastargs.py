"""A command line parsed without argparse, for the forms people type; argparse decides the rest.

Importing argparse and building a command's parser costs ~5 ms, a tenth of
the 50 ms budget of one ``sbatch`` (see ``cli/__init__.py``).  ``parse`` reads
``--opt=value``, ``--opt value``, ``-o value``, ``-ovalue`` and clustered
flags (``-HW``, ``-Wpdebug``), then (for sbatch) one optional positional
followed by the rest of the line verbatim, and returns what argparse's
``vars(parse_args())`` would for the same table.  Whatever it is not sure of
(help, an unknown or malformed option, ``--``, a ``=`` in a short option, a
separate value that starts with ``-``, a bad int, a positional where none is
expected) gives ``None``: the caller then runs argparse, so help, errors and
exit codes stay exactly argparse's own.

A table row is ``(flags, dest, store, metavar, help)``, in ``--help`` order;
``store`` says what argparse does with the option:

* ``str`` or ``int``: takes a value of that type (default ``None``);
* ``True`` or ``False``: a flag storing that constant (``store_const``, default ``None``);
* ``"store_true"``: a flag, default ``False``;
* ``"help"``: prints the help (argparse's ``help`` action; never parsed here);
* ``OptionalValue(const)``: an option whose value is optional and, as getopt_long's
  ``optional_argument``, given only attached (``--nice=5``, ``-K0``); alone it stores
  ``const``.
"""

from __future__ import annotations


class OptionalValue:
    """An option whose value is optional (``--nice`` alone is ``const``). A plain class:
    dataclasses imports inspect, 20 ms of every command's start."""

    __slots__ = ("const",)

    def __init__(self, const: str) -> None:
        self.const = const

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OptionalValue) and other.const == self.const

    def __hash__(self) -> int:
        return hash(self.const)


class Namespace:
    """The options as attributes, as argparse's Namespace holds them. Not
    ``types.SimpleNamespace``: importing ``types`` is 1 of the 39 million instructions of
    an ``sbatch``."""

    def __init__(self, values: dict) -> None:
        self.__dict__.update(values)


Row = tuple[tuple[str, ...], str, object, str | None, str]


def add_rows(parser, rows: tuple[Row, ...]) -> None:
    """Add the table's options to an argparse parser, in the table's order."""
    for flags, dest, store, metavar, text in rows:
        if isinstance(store, type):
            kind = None if store is str else store
            parser.add_argument(*flags, dest=dest, type=kind, metavar=metavar, help=text)
        elif isinstance(store, OptionalValue):
            # argparse would also take a separate next word as the value; parse() does
            # not, and it reads every form of such an option, so argparse sees one only
            # when something else on the line needs it.
            parser.add_argument(*flags, dest=dest, nargs="?", const=store.const, metavar=metavar, help=text)
        elif isinstance(store, str):
            parser.add_argument(*flags, dest=dest, action=store, help=text)
        else:
            parser.add_argument(*flags, dest=dest, action="store_const", const=store, help=text)


def _by_prefix(name: str, options: dict[str, tuple[str, object]]) -> tuple[str, object] | None:
    """The option a shortened ``--name`` stands for, as getopt_long reads it: any prefix
    that names one option (its aliases, ``--license``/``--licenses``, count as one). An
    ambiguous or unknown prefix is argparse's to report."""
    if "--help".startswith(name):  # every parser has --help, in its table or argparse's own
        return None
    matches = {options[flag] for flag in options if flag.startswith("--") and flag.startswith(name)}
    return matches.pop() if len(matches) == 1 else None


def parse(argv: list[str], rows: tuple[Row, ...], rest: tuple[str, str] | None = None) -> dict | None:
    """``argv`` as argparse parses it, or ``None`` when argparse must decide.

    ``rest`` names the optional positional and the list of words after it
    (argparse's ``nargs="?"`` then ``nargs="..."``); without it a positional
    is an error, which argparse words.
    """
    if "--" in argv:  # argparse drops some "--" and keeps others
        return None
    options: dict[str, tuple[str, object]] = {}
    result: dict = {}
    for flags, dest, store, _metavar, _help in rows:
        if store != "help":
            options.update(dict.fromkeys(flags, (dest, store)))
            # The first row of a dest sets its default and its place, as in argparse.
            result.setdefault(dest, False if store == "store_true" else None)
    if rest:
        result[rest[0]], result[rest[1]] = None, []
    i = 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-"):
            if not rest:
                return None
            result[rest[0]], result[rest[1]] = word, argv[i + 1 :]
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            found = options.get(name) or _by_prefix(name, options)
            if found is None or (eq and not isinstance(found[1], type | OptionalValue)):
                return None
            if isinstance(found[1], OptionalValue):
                result[found[0]] = value if eq else found[1].const
                i += 1
                continue
            pairs = [(found, value if eq else None)]
        else:
            if word == "-" or "=" in word:  # a positional; "-p=x" and "-Hp=x" differ in argparse
                return None
            pairs = []
            for at in range(1, len(word)):
                found = options.get("-" + word[at])
                if found is None:
                    return None
                if isinstance(found[1], OptionalValue):
                    # getopt's optional_argument: a value only attached (-K0), never the
                    # next word (-K hostname is -K and a command).
                    result[found[0]] = word[at + 1 :] or found[1].const
                    break
                if isinstance(found[1], type):
                    pairs.append((found, word[at + 1 :] or None))
                    break
                pairs.append((found, None))
        for (dest, store), attached in pairs:
            if not isinstance(store, type):
                result[dest] = True if store == "store_true" else store
                continue
            if attached is None:
                i += 1
                if i == len(argv) or argv[i].startswith("-"):
                    return None
            try:
                result[dest] = store(argv[i] if attached is None else attached)
            except ValueError:
                return None
        i += 1
    return result
