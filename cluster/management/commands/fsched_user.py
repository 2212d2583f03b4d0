"""``manage.py fsched_user add NAME [--staff] [--password-stdin]``: a console and CLI user.

The password is read from standard input with ``--password-stdin`` (one line), else the
account gets an unusable password (it logs in through a directory or single sign-on, or
with the token printed here).  A CLI token is printed alone on standard output, as
``fsched_token create`` prints it: ``FSCHED_TOKEN=$(manage.py fsched_user add bob)``;
the user may also log the CLI in with ``fsched login``.
"""

from __future__ import annotations

import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from cluster.services.api_tokens import token_issue
from slurmwords.durations import format_timestamp

# Login names as Slurm users are Unix names: no spaces or shell-special characters.
_NAME_MAX = 64


class Command(BaseCommand):
    help = "Add a user of the console and the CLI, and print a CLI token for them."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["add"])
        parser.add_argument("username")
        parser.add_argument("--staff", action="store_true", help="an administrator (the admin, every job)")
        parser.add_argument("--password-stdin", action="store_true", help="read the password from stdin")

    def handle(self, *args, action: str, username: str, staff: bool, password_stdin: bool, **options):
        model = get_user_model()
        name = username.strip()
        if not name or len(name) > _NAME_MAX or not all(c.isalnum() or c in "._-" for c in name):
            raise CommandError(
                f"invalid user name {username!r}: letters, digits, '.', '_' or '-', at most 64"
            )
        if model.objects.filter(username=name).exists():
            raise CommandError(f"user {name!r} already exists")
        password = None
        if password_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("empty password on standard input")
        with transaction.atomic():
            user = model(username=name, is_staff=staff)
            if password is None:
                user.set_unusable_password()
            else:
                try:
                    validate_password(password, user)
                except ValidationError as exc:
                    raise CommandError("password refused: " + " ".join(exc.messages)) from None
                user.set_password(password)
            user.save()
            token, text = token_issue(user, name="fsched_user")
        self.stdout.write(text)
        role = "staff user" if staff else "user"
        how = "password set" if password is not None else "no password (unusable)"
        expires = format_timestamp(token.expires, none="never")
        self.stderr.write(f"Added {role} {name} ({how}); CLI token {token.prefix}, expires {expires}")
