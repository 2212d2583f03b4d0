"""A report's query string (the API's and the console's): range, TRES and filters, checked
with errors that name the parameter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from reports import selectors

MAX_TOP = 100000
MAX_GROUPS = 50


class ParamError(ValueError):
    pass


@dataclass(frozen=True)
class ReportParams:
    window: selectors.Window
    tres: list[str]
    accounts: list[str]
    users: list[str]
    top: int
    group: bool
    grouping: list[int]
    flat: bool


def _moment(q: Mapping[str, str], name: str) -> datetime | None:
    text = (q.get(name) or "").strip()
    if not text:
        return None
    try:
        if text.lstrip("-").isdigit():
            return datetime.fromtimestamp(int(text), tz=UTC)
        moment = datetime.fromisoformat(text)
    except (ValueError, OverflowError, OSError):
        raise ParamError(f"{name}: not a time (epoch seconds or ISO 8601): {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _names(q: Mapping[str, str], name: str) -> list[str]:
    return [n.strip() for n in (q.get(name) or "").split(",") if n.strip()][:1000]


def parse(
    q: Mapping[str, str], *, tres_allowed: tuple[str, ...] = tuple(selectors.ASSOC_TRES)
) -> ReportParams:
    start, end = _moment(q, "start"), _moment(q, "end")
    if start and end and end <= start:
        raise ParamError("end: must be after start")
    try:
        tres = selectors.tres_list(q.get("tres") or "", tres_allowed)
    except selectors.ReportError as exc:
        raise ParamError(f"tres: {exc}") from None
    top_text = (q.get("top") or "10").strip()
    if not top_text.isdigit() or int(top_text) > MAX_TOP:
        raise ParamError(f"top: a whole number from 0 to {MAX_TOP}, not {top_text!r}")
    grouping_text = (q.get("grouping") or "50,250,500,1000").strip()
    items = [g.strip() for g in grouping_text.split(",") if g.strip()]
    if not items or len(items) > MAX_GROUPS or not all(g.isdigit() and int(g) < 10**9 for g in items):
        raise ParamError(f"grouping: a comma list of up to {MAX_GROUPS} CPU counts, not {grouping_text!r}")
    return ReportParams(
        window=selectors.window(start, end),
        tres=tres,
        accounts=_names(q, "accounts"),
        users=_names(q, "users"),
        top=int(top_text),
        group=q.get("group") == "1",
        grouping=[int(g) for g in items],
        flat=q.get("flat") == "1",
    )
