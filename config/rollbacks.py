"""Rollback listeners for the project's database backends (config.sqlite, config.postgresql).

Called after every rollback of a transaction or a savepoint, and when a connection closes
inside a transaction (the server undoes it): what was read inside it may have been undone.
cluster.services.pass_snapshot keeps views of the rows between passes and forgets them then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class RollbackListeners:
    """A mixin before Django's DatabaseWrapper."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rollback_listeners: list[Callable[[], None]] = []

    def _told(self) -> None:
        for listener in self.rollback_listeners:
            listener()

    def _rollback(self) -> None:
        try:
            super()._rollback()  # type: ignore[misc]
        finally:
            self._told()

    def _savepoint_rollback(self, sid: str) -> None:
        try:
            super()._savepoint_rollback(sid)  # type: ignore[misc]
        finally:
            self._told()

    def _close(self) -> None:
        try:
            super()._close()  # type: ignore[misc]
        finally:
            if self.in_atomic_block:  # type: ignore[attr-defined]
                self._told()
