"""slurm.conf's comma lists of words and ``name=value`` items (``SchedulerParameters``,
``SlurmctldParameters``, ``DependencyParameters``...): ``bf_interval=30,nohold_on_prolog_fail``.
"""

from __future__ import annotations


def option_items(text: object) -> dict[str, str | None]:
    """Each item's name and value; a bare word's value is None. A name given twice keeps its
    last value, as slurmctld reads these lists left to right."""
    items: dict[str, str | None] = {}
    for item in str(text or "").split(","):
        name, sep, value = item.strip().partition("=")
        if name:
            items[name.strip()] = value.strip() if sep else None
    return items
