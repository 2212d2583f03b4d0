"""Request values checked before a service believes them: types, ranges, lengths, characters.

The node, reservation, limits, HRES and power services take values from JSON bodies and
command lines.  Each value goes through one of these before it reaches a parser, the
database or a hostlist expansion, so a bad one is a 400 naming its field (never an
OverflowError, a UnicodeError or a row that PostgreSQL refuses with a 500).

Bounds follow the columns: ``PositiveIntegerField`` and ``IntegerField`` are 32-bit on
PostgreSQL, hence :data:`INT_MAX`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cluster.core import hostlists
from cluster.core.jobspec import has_control_character
from cluster.services.errors import ServiceError

INT_MAX = 2**31 - 1
NAME_MAX = 64
_TRUE = frozenset({"true", "yes", "1", "on"})
_FALSE = frozenset({"false", "no", "0", "off"})


def body_object(data: object) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ServiceError("The request body must be a JSON object")
    return data


def known_fields(data: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Refuse a misspelt field rather than ignore it (``partiton`` would do nothing)."""
    unknown = sorted(str(k) for k in data if k not in set(allowed))
    if unknown:
        raise ServiceError(f"Unknown field(s): {', '.join(unknown)}", field=unknown[0])


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def integer(value: object, field: str, *, low: int = 0, high: int = INT_MAX) -> int:
    """An integer given as a JSON number or ASCII digits, within ``[low, high]``."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] in "+-" else text
        # Digits only: int() would also take "٣" or "1_000", and a huge string costs time.
        if digits.isascii() and digits.isdigit():
            # Past 20 digits it is out of any range: no need to read it all.
            number = int(text) if len(digits) <= 20 else (high + 1 if text[0] != "-" else low - 1)
    if number is None:
        raise ServiceError(f"Invalid {field} value: {_shown(value)} (an integer is expected)", field=field)
    if not low <= number <= high:
        raise ServiceError(
            f"Invalid {field} value: {_shown(value)} (must be between {low} and {high})", field=field
        )
    return number


def text(value: object, field: str, *, max_length: int, blank_ok: bool = True) -> str:
    """A string without control characters, at most ``max_length`` long (the column's)."""
    if not isinstance(value, str):
        raise ServiceError(f"Invalid {field} value: {_shown(value)} (a string is expected)", field=field)
    if len(value) > max_length:
        raise ServiceError(f"Invalid {field} value: longer than {max_length} characters", field=field)
    if has_control_character(value):
        raise ServiceError(f"Invalid {field} value: {_shown(value)} (control character)", field=field)
    if not blank_ok and not value.strip():
        raise ServiceError(f"Invalid {field} value: empty", field=field)
    return value


def name(value: object, field: str, *, max_length: int = NAME_MAX) -> str:
    """A record's name (node, reservation, user, account, QOS, layer): no blanks either,
    which would split it when scontrol and sacctmgr print it."""
    result = text(value, field, max_length=max_length, blank_ok=False)
    if any(ch.isspace() for ch in result):
        raise ServiceError(f"Invalid {field} value: {_shown(value)} (blank in a name)", field=field)
    return result


def names(value: object, field: str, *, max_length: int, each: int = NAME_MAX) -> list[str]:
    """A comma-separated list of names (``Users=alice,-bob``), the whole bounded too."""
    whole = text(value, field, max_length=max_length)
    return [name(w.strip(), field, max_length=each) for w in whole.split(",") if w.strip()]


def flag(value: object, field: str) -> bool:
    """A boolean: JSON true/false, or the words scontrol passes through (``yes``, ``0``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ServiceError(f"Invalid {field} value: {_shown(value)} (true or false is expected)", field=field)


def hostlist(value: object, field: str, *, limit: int) -> list[str]:
    """The names of a hostlist, refused before expansion if it could name more than
    ``limit`` (the cluster's node count: a longer list cannot name only known nodes)."""
    expr = text(value, field, max_length=hostlists.MAX_TEXT)
    try:
        return hostlists.expand(expr, limit=limit, what=field)
    except ValueError as exc:
        raise ServiceError(str(exc), field=field) from None


def hostlist_size(value: object, field: str, *, limit: int) -> None:
    """Refuse a hostlist naming more than ``limit`` without expanding it (for services
    that expand it themselves)."""
    expr = text(value, field, max_length=hostlists.MAX_TEXT)
    try:
        size = hostlists.count(expr)
    except ValueError as exc:
        raise ServiceError(str(exc), field=field) from None
    if size > limit:
        shown = expr if len(expr) <= 64 else expr[:61] + "..."
        raise ServiceError(
            f"{hostlists.INVALID}: {field} {shown} names up to {size} nodes, more than {limit}", field=field
        )
