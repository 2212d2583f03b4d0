"""The value encodings of Slurm 23.11's ``--json`` output (its data_parser plugin v0.0.40).

squeue, sinfo, scontrol and sacct print their records through one set of encoders
(src/plugins/data_parser/v0.0.40/parsers.c); a script that reads one command's JSON
reads the others' the same way. These are those encoders for fsched's values:

- a number that may be unset or unlimited (``UINT32_NO_VAL`` and kin, and every
  ``TIMESTAMP_NO_VAL``): ``{"set": ..., "infinite": ..., "number": ...}``;
- a process's exit (``PROCESS_EXIT_CODE``): ``status``, ``return_code``, ``signal``;
- a comma-separated string (``CSV_STRING``): a list of its words, ``[]`` for none;
- a missing string: ``""``, never ``null`` (the plugin's non-complex mode).

And the ``meta`` object every answer carries (data_parser_cli_meta in
src/interfaces/data_parser.c).
"""

from __future__ import annotations

import json
import signal
from datetime import datetime
from json.encoder import encode_basestring_ascii as _string

DATA_PARSER = "data_parser/v0.0.40"


def no_val(value: float | None, *, infinite: bool = False) -> dict:
    """``UINT32_NO_VAL``, ``UINT16_NO_VAL``, ``UINT64_NO_VAL``: None is NO_VAL (unset),
    ``infinite`` is INFINITE (unset too, as the plugin prints it)."""
    if infinite:
        return {"set": False, "infinite": True, "number": 0}
    if value is None:
        return {"set": False, "infinite": False, "number": 0}
    return {"set": True, "infinite": False, "number": value}


def float_no_val(value: float | None) -> dict:
    """``FLOAT64_NO_VAL``: the number as a float, 0.0 when unset."""
    if value is None:
        return {"set": False, "infinite": False, "number": 0.0}
    return no_val(float(value))


def epoch(iso: str | None) -> int:
    """An ISO time from the API as Unix seconds; 0 for none (a time_t Slurm never set)."""
    return int(datetime.fromisoformat(iso).timestamp()) if iso else 0


def timestamp(iso: str | None) -> dict:
    """``TIMESTAMP_NO_VAL``: a time_t Slurm never set is 0 in its records, which the plugin
    prints as a set 0, not as NO_VAL."""
    return no_val(epoch(iso))


def signal_name(number: int) -> str:
    """sig_num2name: the name without ``SIG`` (``KILL``), or the number for one it lacks."""
    try:
        return signal.Signals(number).name.removeprefix("SIG")
    except ValueError:
        return str(number)


def exit_code(code: int | None, sig: int | None) -> dict:
    """``PROCESS_EXIT_CODE``: a signal's end has no return code, an exit no signal."""
    if sig:
        return {
            "status": ["SIGNALED"],
            "return_code": no_val(None),
            "signal": {"id": no_val(sig), "name": signal_name(sig)},
        }
    code = code or 0
    return {
        "status": ["ERROR" if code else "SUCCESS"],
        "return_code": no_val(code),
        "signal": {"id": no_val(None), "name": ""},
    }


def csv(text: str | None) -> list[str]:
    """``CSV_STRING``: the words between commas, ``[]`` for none."""
    return [word for word in (text or "").split(",") if word]


def text(value: object) -> str:
    """``STRING``: ``""`` for a value Slurm never set."""
    return "" if value is None else str(value)


def meta(
    command: list[str],
    *,
    user: str,
    group: str,
    cluster: str,
    version: str,
    source: str = "",
    accounting_storage: str = "",
) -> dict:
    """The ``meta`` object: who asked, from which terminal, of which Slurm.

    ``command`` is the command line as the program got it (argv, its name first).
    data_parser_cli_meta copies all of argv but its last word into the list (a
    ``memcpy`` of argc - 1 entries), so ``squeue --json`` says ``["squeue"]``: printed so.
    """
    major, minor, micro = ([*version.split("."), "", "", ""])[:3]
    return {
        "plugin": {
            "type": "",
            "name": "",
            "data_parser": DATA_PARSER,
            "accounting_storage": accounting_storage,
        },
        "client": {"source": source, "user": user, "group": group},
        "command": command[:-1],
        "slurm": {
            "version": {"major": major, "micro": micro, "minor": minor},
            "release": version,
            "cluster": cluster,
        },
    }


_PADS = ["\n" + "  " * depth for depth in range(16)]


def _pad(depth: int) -> str:
    return _PADS[depth] if depth < len(_PADS) else "\n" + "  " * depth


def dumps(doc: object) -> str:
    """``doc`` as ``json.dumps(doc, indent=2)`` writes it, and a line after it: the
    serializer's pretty form. The standard library indents with its pure-Python encoder;
    this walk writes the same text in less than half its time (squeue's 10,000 jobs are
    some 13 million values)."""
    out: list[str] = []
    append = out.append

    def walk(obj: object, depth: int) -> None:
        kind = type(obj)
        if kind is dict or kind is list:
            if not obj:
                append("{}" if kind is dict else "[]")
                return
            pad = _pad(depth + 1)
            if kind is dict:
                sep = "{" + pad
                for key, value in obj.items():  # type: ignore[union-attr]
                    append(sep + _string(str(key)) + ": ")
                    sep = "," + pad
                    walk(value, depth + 1)
                append(_pad(depth) + "}")
            else:
                sep = "[" + pad
                for value in obj:  # type: ignore[union-attr]
                    append(sep)
                    sep = "," + pad
                    walk(value, depth + 1)
                append(_pad(depth) + "]")
        elif kind is str:
            append(_string(obj))  # type: ignore[arg-type]
        elif kind is int:
            append(int.__repr__(obj))  # type: ignore[arg-type]
        elif obj is True or obj is False or obj is None:
            append("true" if obj else "false" if obj is False else "null")
        else:  # floats (and tuples, subclasses) as json spells them: 1.0, NaN, Infinity
            append(json.dumps(obj, indent=2).replace("\n", _pad(depth)))

    walk(doc, 0)
    append("\n")
    return "".join(out)


def answer(body: dict, meta_object: dict) -> dict:
    """A whole answer: the records, then ``meta``, ``errors`` and ``warnings`` (the order
    of the plugin's OPENAPI_*_RESP parsers)."""
    return {**body, "meta": meta_object, "errors": [], "warnings": []}


__all__ = [
    "DATA_PARSER",
    "answer",
    "csv",
    "dumps",
    "epoch",
    "exit_code",
    "float_no_val",
    "meta",
    "no_val",
    "signal_name",
    "text",
    "timestamp",
]
