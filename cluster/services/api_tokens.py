"""API tokens: issue, list and revoke; the database keeps only their digests.

A token reads ``<prefix>.<secret>``: the prefix (10 url-safe characters) is stored as it is
and finds the row in one indexed lookup, the secret (32 random bytes) never leaves the
answer that issued it, and the row holds the SHA-256 of the whole text.  With 256 random
bits there is nothing to guess, so the plain digest is as strong as a slow password hash
and keeps authentication cheap.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from cluster import clock
from cluster.models import ApiToken
from cluster.services.errors import NotFound, ServiceError

PREFIX_CHARS = 10
SECRET_BYTES = 32
# Expiry the issuing request may ask for, at most (about ten years).
MAX_DAYS = 3650


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def split(text: str) -> tuple[str, str] | None:
    """(prefix, secret) of a token's text, None if it cannot be one."""
    prefix, dot, secret = text.partition(".")
    if not dot or not prefix or not secret or len(prefix) > PREFIX_CHARS:
        return None
    return prefix, secret


def matches(text: str, stored_digest: str) -> bool:
    """Constant time, so a response's timing tells nothing about how much of it matched."""
    return hmac.compare_digest(digest(text), stored_digest)


def _new_prefix() -> str:
    # A prefix starting with "-" would read as an option to ``fsched_token revoke``.
    while True:
        prefix = secrets.token_urlsafe(PREFIX_CHARS)[:PREFIX_CHARS]
        if prefix[0] != "-":
            return prefix


def expiry_days(days: int | None) -> int:
    """The validated lifetime in days: the setting when not given, 0 meaning never."""
    if days is None:
        return settings.FSCHED_TOKEN_TTL_DAYS
    if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= MAX_DAYS:
        raise ServiceError(
            f"days: must be a whole number from 0 to {MAX_DAYS} (0: never expires)", field="days"
        )
    return days


def token_issue(
    user: AbstractBaseUser, *, days: int | None = None, name: str = "", now: datetime | None = None
) -> tuple[ApiToken, str]:
    """A new token for ``user`` and its text, which is returned here and never again."""
    if len(name) > ApiToken._meta.get_field("name").max_length:
        raise ServiceError("name: at most 64 characters", field="name")
    now = now or clock.now()
    lifetime = expiry_days(days)
    while True:
        prefix = _new_prefix()
        if not ApiToken.objects.filter(prefix=prefix).exists():
            break
    text = f"{prefix}.{secrets.token_urlsafe(SECRET_BYTES)}"
    token = ApiToken.objects.create(
        prefix=prefix,
        digest=digest(text),
        user=user,
        name=name,
        created=now,
        expires=now + timedelta(days=lifetime) if lifetime else None,
    )
    return token, text


def token_revoke(
    prefix: str, *, user: AbstractBaseUser | None = None, now: datetime | None = None
) -> ApiToken:
    """Revoke the token with ``prefix`` (one of ``user``'s when given); revoking twice keeps
    the first time."""
    query = ApiToken.objects.filter(prefix=prefix)
    if user is not None:
        query = query.filter(user=user)
    token = query.first()
    if token is None:
        raise NotFound(
            f"No token with prefix {prefix}" + (f" for user {user.get_username()}" if user else "")
        )
    if token.revoked is None:
        token.revoked = now or clock.now()
        token.save(update_fields=["revoked"])
    return token


def tokens_of(user: AbstractBaseUser) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user).order_by("created", "id"))


def tokens_revoke_all(user: AbstractBaseUser, *, now: datetime | None = None) -> int:
    """Revoke every live token of ``user`` (a lost laptop, a departed user); the count."""
    return ApiToken.objects.filter(user=user, revoked__isnull=True).update(revoked=now or clock.now())
