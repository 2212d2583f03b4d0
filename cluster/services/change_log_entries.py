"""What the change log's readers are told, and its sizes (cluster/services/change_log.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

TABLE = "fsched_change"
# Its readers trim it when it holds more than TRIM_AT entries, down to the newest KEEP.
TRIM_AT = 50_000
KEEP = 10_000
# More entries than this since the last look: the tables named are read whole.
ROWS_AT_MOST = 5_000


@dataclass
class Changes:
    """What was written since the last look: table -> row ids (None: the whole table)."""

    tables: dict[str, set[int] | None] = field(default_factory=dict)
    everything: bool = False  # the log cannot say: forget all

    def add(self, table: str, row: int | None) -> None:
        if table in self.tables and self.tables[table] is None:
            return
        if row is None:
            self.tables[table] = None
        else:
            self.tables.setdefault(table, set()).add(row)  # type: ignore[union-attr]
