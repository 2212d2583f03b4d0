"""Settings read from the environment, refused loudly when mistyped.

``FSCHED_HTTPS=ture`` used to mean "off", and ``FSCHED_HTTP_THREADS=four`` stopped every
process with a ValueError that named no variable. Each reader here raises
ImproperlyConfigured naming the variable, its value, and what it takes, before anything
starts.
"""

from __future__ import annotations

import math
import os

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


def envint(name: str, default: int, *, minimum: int | None = 0) -> int:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a whole number") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a whole number of at least {minimum}")
    return number


def envfloat(name: str, default: float, *, minimum: float = 0.0) -> float:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a number (seconds)") from None
    if not math.isfinite(number) or number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a finite number of at least {minimum:g}")
    return number


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def envlevel(name: str, default: str) -> str:
    value = (_raw(name) or default).upper()
    if value not in LOG_LEVELS:
        raise ImproperlyConfigured(f"{name}={value!r}: expected one of {', '.join(LOG_LEVELS)}")
    return value
