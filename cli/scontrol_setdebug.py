"""``scontrol setdebug LEVEL``: the controller's debug level while it runs, until the next
reconfigure (``POST /api/config/debug/``; cluster/services/debug_level.py).

As src/scontrol/scontrol.c's ``_setdebug``: a level name in any case or a number 0-9
(``invalid debug level: X`` otherwise), success silent, a refusal ``slurm_set_debug_level
error: <error>`` and exit 1; one or no word after the level, and that word ``Nodes=``.
"""

from __future__ import annotations

import sys

from slurmwords.debug_levels import setdebug_level


def cmd_setdebug(client, words: list[str], opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    if len(words) not in (1, 2):
        if not opts.quiet:
            sys.stderr.write(f"too {'few' if not words else 'many'} arguments for keyword:setdebug\n")
        return 1
    level = setdebug_level(words[0])
    if level is None:
        if not opts.quiet:
            sys.stderr.write(f"invalid debug level: {words[0]}\n")
        return 1
    if len(words) == 2:
        if words[1][:6].lower() != "nodes=":
            if not opts.quiet:
                sys.stderr.write(f"Invalid option: {words[0]}\n")  # scontrol names the level here
            return 1
        # Agents log at their own --log-level; no request reaches them for it.
        sys.stderr.write("scontrol: error: setdebug Nodes= is not supported by fsched\n")
        return 1
    try:
        client.post("/api/config/debug/", {"level": level})
    except ApiError as exc:
        if not opts.quiet:
            sys.stderr.write(f"slurm_set_debug_level error: {exc.message}\n")
        return 1
    return 0
