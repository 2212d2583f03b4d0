"""``manage.py fsched_token create|list|revoke USER``: API tokens from the controller's host.

``create`` prints the new token alone on standard output (``FSCHED_TOKEN=$(... create
alice)``), the only time it is shown; ``list`` shows prefixes and dates, never a secret;
``revoke`` revokes the tokens named by prefix, or every live token of the user.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from cluster.services.api_tokens import token_issue, token_revoke, tokens_of, tokens_revoke_all
from cluster.services.errors import ServiceError
from slurmwords.durations import format_timestamp


def _when(value) -> str:
    return format_timestamp(value, none="-")


class Command(BaseCommand):
    help = "Create, list or revoke a user's API tokens."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["create", "list", "revoke"])
        parser.add_argument("username")
        parser.add_argument("prefixes", nargs="*", help="revoke: the tokens' prefixes (default: all)")
        parser.add_argument("--days", type=int, help="create: days until it expires (0: never)")
        parser.add_argument("--name", default="", help="create: a note on what the token is for")

    def handle(self, *args, action: str, username: str, prefixes: list[str], days, name: str, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        if prefixes and action != "revoke":
            raise CommandError(f"{action} takes no prefixes: {' '.join(prefixes)}")
        try:
            if action == "create":
                token, text = token_issue(user, days=days, name=name)
                self.stdout.write(text)
                self.stderr.write(f"Token {token.prefix} for {username}, expires {_when(token.expires)}")
            elif action == "list":
                self.stdout.write(f"{'PREFIX':<12} {'NAME':<12} {'CREATED':<19} {'EXPIRES':<19} REVOKED")
                for t in tokens_of(user):
                    self.stdout.write(
                        f"{t.prefix:<12} {t.name or '-':<12} {_when(t.created):<19} "
                        f"{_when(t.expires):<19} {_when(t.revoked)}"
                    )
            elif prefixes:
                for prefix in prefixes:
                    self.stdout.write(f"Revoked {token_revoke(prefix, user=user).prefix}")
            else:
                self.stdout.write(f"Revoked {tokens_revoke_all(user)} token(s) of {username}")
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
