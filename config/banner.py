"""What ``fsched server`` says when it starts: where it listens, in which mode, and a
warning for each setting that would break a deployment on several hosts."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

# ALLOWED_HOSTS' own defaults: they name this machine only, never an address agents reach.
LOOPBACK_NAMES = frozenset({"localhost", "testserver"})


def start_lines(host: str, port: int, workers: int) -> list[str]:
    """What the server says when it starts: where it listens and in which mode, then a
    warning for each setting that would break a deployment on several hosts."""
    # The settings module alone, without django.setup(): the values the workers will read
    # (FSCHED_RUN_CYCLES was set from --no-cycles above).
    from config import settings  # noqa: PLC0415

    database = describe_database(settings.DATABASES["default"])
    if settings.FSCHED_RUN_CYCLES:
        cycles = "cycles in this process"
    elif settings.DISTRIBUTED:
        cycles = "cycles in Celery"
    else:
        cycles = "no cycles (--no-cycles)"
    if settings.DISTRIBUTED:
        plural = "s" if workers != 1 else ""
        mode = f"distributed: {database}, {describe_redis(settings.REDIS_URL)}; {workers} worker{plural}"
    else:
        mode = f"embedded: {database}"
    lines = [f"listening on http://{url_host(host)}:{port} ({mode}; {cycles})"]
    if not is_loopback(host) and not names_this_host(host, settings.ALLOWED_HOSTS):
        lines.append(
            f"warning: --host {host} is reachable from other hosts, but FSCHED_ALLOWED_HOSTS "
            f"({','.join(settings.ALLOWED_HOSTS)}) names neither that address nor this host: "
            f"requests to http://{url_host(host)}:{port}/ (CLI, API, console) will get "
            "400 Bad Request; add the address or the name clients use"
        )
    if settings.DISTRIBUTED:
        if not os.environ.get("FSCHED_SECRET_KEY"):
            lines.append(
                "warning: distributed mode without FSCHED_SECRET_KEY: this host signs with its "
                f"own key ({settings.STATE_DIR / 'secret_key'}), so console sessions and CSRF "
                "tokens signed by one host are refused by the others; give every host the same key"
            )
        if not os.environ.get("FSCHED_AGENT_KEY"):
            lines.append(
                "warning: distributed mode without FSCHED_AGENT_KEY: this host has its own "
                f"cluster key ({settings.STATE_DIR / 'agent_key'}), so an agent is refused by "
                "every host but the one whose key it holds; give every server host and agent the same key"
            )
    return lines


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def names_this_host(host: str, allowed: list[str]) -> bool:
    """Whether ALLOWED_HOSTS lets clients reach ``host``: it holds the address itself, a
    wildcard, or some name that is not loopback's (the host's DNS name, we trust)."""
    for entry in allowed:
        bare = entry.strip("[]").lower()
        if entry == "*" or bare == host.strip("[]").lower():
            return True
        if bare in LOOPBACK_NAMES or is_loopback(bare):
            continue
        try:
            ipaddress.ip_address(bare)
        except ValueError:
            return True  # a name (or .domain): it may well resolve to this host
    return False


def describe_database(db: dict) -> str:
    """The database in one phrase, never its password."""
    engine = db["ENGINE"]
    if "postgresql" in engine:
        where = db.get("HOST") or "local socket"
        if db.get("PORT"):
            where = f"{where}:{db['PORT']}"
        user = f"{db['USER']}@" if db.get("USER") else ""
        return f"PostgreSQL {user}{where}/{db['NAME']}"
    if "sqlite" in engine:
        return f"SQLite {db['NAME']}"
    return f"{engine} {db.get('NAME', '')}".strip()


def describe_redis(url: str) -> str:
    """Redis's address and database number from its URL, never its user or password."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"Redis {parts.path}"
    db = parts.path.strip("/") or "0"
    tls = " (TLS)" if parts.scheme == "rediss" else ""
    host = parts.hostname or "localhost"
    return f"Redis{tls} {url_host(host)}:{parts.port or 6379}/{db}"
