"""Settings read from the environment, refused loudly when mistyped.

``FSCHED_HTTPS=ture`` used to mean "off", and ``FSCHED_HTTP_THREADS=four`` stopped every
process with a ValueError that named no variable. Each reader here raises
ImproperlyConfigured naming the variable, its value, and what it takes, before anything
starts.
"""

from __future__ import annotations

import math
import os
from typing import Any

from django.core.exceptions import ImproperlyConfigured

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off", "")


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def envbool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected 1, true, yes, on or 0, false, no, off")


def _number(name: str, default: float, parse: type, *, what: str, bounded: str, minimum: float) -> Any:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = parse(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected {what}") from None
    if not math.isfinite(number) or number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r}: expected {bounded} of at least {minimum:g}")
    return number


def envint(name: str, default: int, *, minimum: int = 0) -> int:
    return _number(name, default, int, what="a whole number", bounded="a whole number", minimum=minimum)


def envfloat(name: str, default: float, *, minimum: float = 0.0) -> float:
    return _number(
        name, default, float, what="a number (seconds)", bounded="a finite number", minimum=minimum
    )


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def envlevel(name: str, default: str) -> str:
    value = (_raw(name) or default).upper()
    if value not in LOG_LEVELS:
        raise ImproperlyConfigured(f"{name}={value!r}: expected one of {', '.join(LOG_LEVELS)}")
    return value


def envzone(name: str, default: str) -> str:
    """The IANA time zone ``name`` names (``Europe/Paris``; a leading ``:`` as glibc
    allows), else ``default``: the controller's local time, as slurmctld takes it from TZ.
    A POSIX rule (``CET-1CEST``) or a file path is not a zone name Django can use, and
    leaves the default rather than stopping the server."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # noqa: PLC0415 - only read at start

    value = (_raw(name) or "").lstrip(":")
    if not value or value.startswith("/"):
        return default
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        return default
    return value


def envnetworks(name: str, default: str) -> tuple[str, ...]:
    """A comma list of networks (``10.0.0.0/8,::1``; an address alone is its own network),
    each checked here so that a typo stops the server instead of closing or opening a door."""
    import ipaddress  # noqa: PLC0415 - only read at start

    value = _raw(name)
    text = default if value is None else value
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        try:
            out.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}={text!r}: {item!r} is not a network (expected addresses or CIDRs such as 10.0.0.0/8)"
            ) from None
    return tuple(out)
