"""Who runs a command, as the ``meta.client`` of Slurm's ``--json`` output names them.

data_parser_cli_meta (src/interfaces/data_parser.c) takes the process's own uid and gid
and the terminal of its stdin, else stdout, else stderr (``/dev/pts/3``; nothing when none
is a terminal, as in a pipe from a script)."""

from __future__ import annotations

import os


def terminal() -> str:
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                return os.ttyname(fd)
        except OSError:
            continue
    return ""


def user_and_group() -> tuple[str, str]:
    """The process's user and group names (uid_to_string_or_null: "" for an id without one)."""
    try:
        import grp  # noqa: PLC0415
        import pwd  # noqa: PLC0415
    except ImportError:  # not a POSIX host
        return "", ""
    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        user = ""
    try:
        group = grp.getgrgid(os.getgid()).gr_name
    except KeyError:
        group = ""
    return user, group


__all__ = ["terminal", "user_and_group"]
