"""``-u`` of squeue, scancel and sacct: the names that are no user of the cluster.

Slurm's commands turn each name into a uid with ``getpwnam`` before asking for jobs and
refuse a name that has none (each in its own words: src/squeue/opts.c, src/scancel/opt.c,
src/common/slurm_protocol_defs.c for sacct); fsched's users are the controller's
accounts, so the controller says which names it knows (``GET /api/users/``).
"""

from __future__ import annotations


def unknown_users(client, names: list[str]) -> list[str]:
    """The names of ``names`` that are not users here, in their order.  A controller
    older than ``/api/users/`` (404) cannot say: then no name is refused."""
    from cli.client import ApiError  # noqa: PLC0415

    wanted = [n for n in dict.fromkeys(names) if n]
    if not wanted:
        return []
    try:
        answer = client.get("/api/users/", {"name": ",".join(wanted)})
    except ApiError as exc:
        if exc.status == 404:
            return []
        raise
    known = set(answer.get("users", [])) if isinstance(answer, dict) else set()
    return [n for n in wanted if n not in known]
