"""``dumps``/``loads`` on the C accelerator ``_json``, without importing ``json``.

``import json`` compiles five regular expressions for its pure-Python
fallbacks and costs ~1.2 ms of every command's start (see ``cli/__init__.py``);
CPython's ``json`` does its work in ``_json`` anyway.  Same output and the
same accepted input as ``json.dumps``/``json.loads`` with default arguments
(``json.dumps`` runs this very encoder); what the fast path does not decode,
``json.loads`` decodes or rejects with its own error.  Where ``_json`` is
missing (not CPython) this is ``json`` itself.
"""

from __future__ import annotations

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    from json import dumps, loads
else:
    _SPACE = " \t\n\r"  # JSON's whitespace, not str.strip()'s
    _CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}

    class _Context:
        """What ``_json.make_scanner`` reads off a ``json.JSONDecoder()``."""

        strict = True
        object_hook = object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = _CONSTANTS.__getitem__

    _scan = _json.make_scanner(_Context)

    def _unencodable(obj: object) -> object:
        raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")

    def dumps(obj: object) -> str:
        # A fresh marker dict per call, as json does: the circular-reference
        # check must not remember a previous call that failed half-way.
        encode = _json.make_encoder(
            {}, _unencodable, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True
        )
        return "".join(encode(obj, 0))

    def loads(data: str | bytes) -> object:
        try:
            text = data.decode("utf-8", "surrogatepass") if isinstance(data, bytes) else data
            obj, end = _scan(text, len(text) - len(text.lstrip(_SPACE)))
            if not text[end:].strip(_SPACE):
                return obj
        except (StopIteration, ValueError):
            pass
        # Not plain UTF-8 JSON: json decides (a BOM, UTF-16) and words the error.
        import json  # noqa: PLC0415

        return json.loads(data)
