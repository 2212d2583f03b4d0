"""A list whose rows are plain cells (events, the audit log, the node table): one template
renders them all, and an export writes the same cells."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone


@dataclass(frozen=True)
class Cell:
    text: str | int | float
    href: str = ""
    css: str = ""
    title: str = ""


@dataclass(frozen=True)
class Row:
    key: str  # data-key of the <tr>, for tests and scripts
    cells: list[Cell] = field(default_factory=list)
    data: dict[str, str] = field(default_factory=dict)

    def values(self) -> list[str | int | float]:
        return [c.text for c in self.cells]


def aware(value: datetime | None) -> datetime | None:
    if value is None or timezone.is_aware(value):
        return value
    return timezone.make_aware(value)


def shown_time(value: datetime) -> str:
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S")
