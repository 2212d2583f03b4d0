"""A migrated database for the benchmarks that call the services in their own process."""

from __future__ import annotations

import os


def migrated(state_dir: str, *, settings: str = "config.settings", database_url: str | None = None) -> None:
    """Django set up on ``settings`` with its state in ``state_dir``, its database migrated:
    an SQLite file there, or the PostgreSQL database at ``database_url``.  No Redis: a
    benchmark's process must not reach a running cluster's."""
    for name in ("FSCHED_REDIS_URL", "FSCHED_DATABASE_URL", "FSCHED_SQLITE_PATH"):
        os.environ.pop(name, None)
    if database_url:
        os.environ["FSCHED_DATABASE_URL"] = database_url
    os.environ["FSCHED_STATE_DIR"] = state_dir
    os.environ["DJANGO_SETTINGS_MODULE"] = settings
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
