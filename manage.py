#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from cluster.core.state_files import StateDirUnusable

    try:
        execute_from_command_line(sys.argv)
    except StateDirUnusable as exc:
        # Raised while the settings load: one line that says what to do, not a traceback.
        sys.exit(f"manage.py: error: {exc}")
