"""The rows of the what-if page's comparison table (filled at merge with the report's
compare())."""

from __future__ import annotations

from typing import Any


def comparison_rows(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[dict[str, Any]]:
    return []
