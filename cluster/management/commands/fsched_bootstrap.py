"""Set up an installation: the private state directory and its keys, the administrator
named after the Unix user, and that user's CLI logged in.

Each key the environment does not give (FSCHED_SECRET_KEY, FSCHED_AGENT_KEY) is created
0600 in FSCHED_STATE_DIR by the first run.  The password is printed once, when the
account is created.  Later runs keep both; every run writes a fresh API token (the
database keeps only its digest, so an old one cannot be read back) and revokes the one
the credentials file held before.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from cluster.core.state_files import create_keys, create_private_file
from cluster.services.api_tokens import split, token_issue, token_revoke
from cluster.services.errors import NotFound


def cli_credentials_path() -> Path:
    if explicit := os.environ.get("FSCHED_CLI_CONFIG"):
        return Path(explicit)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "fsched" / "cli.json"


class Command(BaseCommand):
    help = (
        "Create the state directory's keys, the admin account for the current Unix user, "
        "and the CLI credentials."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default=getpass.getuser())
        parser.add_argument("--url", default=f"http://127.0.0.1:{os.environ.get('FSCHED_PORT', '8000')}")

    def handle(self, *args, username: str, url: str, **options):
        if created := create_keys(settings.STATE_DIR):
            self.stdout.write(f"Created {', '.join(str(p) for p in created)} (mode 0600)")
        users = get_user_model()
        # The keys need no database, so they are made even so; the account needs the tables.
        if users._meta.db_table not in connection.introspection.table_names():
            raise CommandError("the database has no tables yet: run `manage.py migrate` first")
        user = users.objects.filter(username=username).first()
        if user is None:
            password = secrets.token_urlsafe(12)
            # Sixteen random characters: the validators' own check, so an administrator
            # who tightens them learns it here rather than never.
            validate_password(password, users(username=username))
            user = users.objects.create_superuser(username=username, email="", password=password)
            self.stdout.write(
                f"Created the administrator '{username}' with password: {password}\n"
                "(shown once; log in to the console at /admin/ or with 'fsched login')"
            )
        path = cli_credentials_path()
        self._revoke_previous(path, user)
        _token, text = token_issue(user, name="bootstrap")
        # An existing directory is the user's (it may be /tmp): only a new one is made private.
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        create_private_file(path, json.dumps({"url": url, "token": text, "username": username}))
        self.stdout.write(f"CLI logged in as {username} ({path})")

    @staticmethod
    def _revoke_previous(path: Path, user) -> None:
        """Each run would otherwise leave one more live token behind."""
        try:
            old = json.loads(path.read_text()).get("token", "")
        except (OSError, ValueError, AttributeError):
            return
        if isinstance(old, str) and (parts := split(old)):
            with contextlib.suppress(NotFound):
                token_revoke(parts[0], user=user)
