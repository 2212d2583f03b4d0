"""Create the administrator named after the Unix user and log that user's CLI in.

The password is printed once, when the account is created; later runs keep it.
"""

from __future__ import annotations

import getpass
import json
import os
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token


def cli_credentials_path() -> Path:
    if explicit := os.environ.get("FSCHED_CLI_CONFIG"):
        return Path(explicit)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "fsched" / "cli.json"


class Command(BaseCommand):
    help = "Create the admin account for the current Unix user and write the CLI credentials."

    def add_arguments(self, parser):
        parser.add_argument("--username", default=getpass.getuser())
        parser.add_argument("--url", default=f"http://127.0.0.1:{os.environ.get('FSCHED_PORT', '8000')}")

    def handle(self, *args, username: str, url: str, **options):
        users = get_user_model()
        user = users.objects.filter(username=username).first()
        if user is None:
            password = secrets.token_urlsafe(12)
            user = users.objects.create_superuser(username=username, email="", password=password)
            self.stdout.write(
                f"Created the administrator '{username}' with password: {password}\n"
                "(shown once; log in to the console at /admin/ or with 'fsched login')"
            )
        token, _ = Token.objects.get_or_create(user=user)
        path = cli_credentials_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"url": url, "token": token.key, "username": username}))
        path.chmod(0o600)
        self.stdout.write(f"CLI logged in as {username} ({path})")
