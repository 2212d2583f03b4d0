"""The API's JSON parser: DRF's, with the document's shape bounded before a view sees it.

DRF's parser lets a 100,000-deep array through as a RecursionError (a 500) and hands the
view strings holding lone surrogates (JSON's ``"\\ud800"``), which fail later in the
database driver, in the renderer or in the agent's execve.  Here both become a 400 that
names where they are.  The body's size is bounded before this, by Django's
``DATA_UPLOAD_MAX_MEMORY_SIZE`` (DRF reads JSON through ``request.body``) and by the
server (config.http).
"""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from cluster.core.jobspec import unicode_problem
from cluster.services.errors import ServiceError

# Deeper than any request of the API (a reservation's or an association's lists of lists).
MAX_DEPTH = 32


def _where(path: tuple[Any, ...]) -> str:
    """``("environment", "PATH")`` -> ``environment.PATH``, cut short for a message."""
    text = ".".join(str(p) for p in path) or "body"
    text = "".join(c if c.isprintable() and not unicode_problem(c) else "?" for c in text[:81])
    return text if len(text) <= 80 else text[:77] + "..."


def check_document(data: Any) -> None:
    """Refuse a parsed document nested deeper than MAX_DEPTH or holding a string that is
    not valid Unicode; walked without recursion, keys included."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise ServiceError(
                f"JSON parse error - nested more than {MAX_DEPTH} deep", field=_where(path[:1])
            )
        if isinstance(value, str):
            if (problem := unicode_problem(value)) is not None:
                raise ServiceError(f"Invalid {_where(path)}: {problem}", field=_where(path))
        elif isinstance(value, dict):
            for key, item in value.items():
                if (problem := unicode_problem(key)) is not None:
                    raise ServiceError(f"Invalid key in {_where(path)}: {problem}", field=_where(path))
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, i)) for i, item in enumerate(value))


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            # The C scanner gives up at the interpreter's recursion limit.
            raise ParseError(f"JSON parse error - nested more than {MAX_DEPTH} deep") from None
        check_document(data)
        return data
