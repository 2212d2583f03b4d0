"""``-u`` of squeue, scancel and sacct: the names that are no user of the cluster.

Slurm's commands turn each name into a uid with ``uid_from_string`` before asking for jobs
(a login name, or a number taken as a uid) and refuse a name that has none (each in its own
words: src/squeue/opts.c, src/scancel/opt.c, src/common/slurm_protocol_defs.c for sacct).
fsched's users are the controller's accounts, so the controller says which names it knows
(``GET /api/users/``); a number is this host's uid of a login name (``squeue -u $UID``).
"""

from __future__ import annotations


def resolved(names: list[str]) -> dict[str, str]:
    """Each name as the user name to ask for: a number that is a uid here, that uid's
    login name; any other word itself."""
    out = {}
    for name in names:
        out[name] = name
        if name.isascii() and name.isdigit():
            try:
                import pwd  # noqa: PLC0415

                out[name] = pwd.getpwuid(int(name)).pw_name
            except (ImportError, KeyError, OverflowError):
                pass
    return out


def unknown_users(client, names: list[str]) -> list[str]:
    """The names of ``names`` that are not users here, in their order.  A controller
    older than ``/api/users/`` (404) cannot say: then no name is refused."""
    from cli.client import ApiError  # noqa: PLC0415

    wanted = resolved([n for n in dict.fromkeys(names) if n])
    if not wanted:
        return []
    try:
        answer = client.get("/api/users/", {"name": ",".join(dict.fromkeys(wanted.values()))})
    except ApiError as exc:
        if exc.status == 404:
            return []
        raise
    known = set(answer.get("users", [])) if isinstance(answer, dict) else set()
    return [n for n, user in wanted.items() if user not in known]
