"""sbatch ``--get-user-env``: the job's environment starts from the user's login
environment, as Slurm loads it with ``su - <user> -c env`` on the node.

The user's login shell (from the passwd entry) runs as the job's user with a fresh
environment (HOME, USER, LOGNAME, SHELL, a plain PATH, as ``su -`` gives), as a login
shell (mode ``L``, the default) or a plain one (``S``), and prints its environment after
a marker, so whatever the profile prints is skipped.  Variables the submission carries
win over the login ones, as sbatch(1) says ("environment variables already set in
sbatch's environment will take precedence").  A shell that fails or outlives the timeout
fails the launch with the reason (Slurm falls back to a cached environment, which fsched
does not keep).  The shell runs while the agent launches the job: a slow profile delays
the agent's other work by at most the timeout.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from slurmwords.job_options import parse_get_user_env

if TYPE_CHECKING:
    from agent.jobs import Account

MARKER = "FSCHED_LOGIN_ENV"
_DUMP = f"printf '\\0{MARKER}\\0'; env -0"
# What the shell sets for itself rather than the user's profile.
_SHELL_OWN = frozenset({"_", "PWD", "OLDPWD", "SHLVL"})
_SU_PATH = "/usr/local/bin:/usr/bin:/bin"


class UserEnvError(Exception):
    """The login environment could not be read; the message says why."""


def login_environment(account: Account, *, timeout: float, login: bool = True) -> dict[str, str]:
    """The environment ``account``'s login shell sets up."""
    try:
        entry = pwd.getpwnam(account.name)
        shell, home = entry.pw_shell or "/bin/sh", account.home or entry.pw_dir
    except KeyError:
        shell, home = "/bin/sh", account.home or os.environ.get("HOME", "/")
    env = {"HOME": home, "USER": account.name, "LOGNAME": account.name, "SHELL": shell, "PATH": _SU_PATH}
    ids: dict[str, Any] = {}
    if account.switches:
        ids = {"user": account.uid, "group": account.gid, "extra_groups": list(account.groups)}
    argv = [shell, "-l", "-c", _DUMP] if login else [shell, "-c", _DUMP]
    try:
        done = subprocess.run(  # a fixed command line: no user text in it
            argv,
            env=env,
            cwd=home if os.path.isdir(home) else "/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
            start_new_session=True,
            **ids,
        )
    except subprocess.TimeoutExpired:
        raise UserEnvError(f"--get-user-env: {shell} did not finish in {timeout:g} s") from None
    except OSError as exc:
        raise UserEnvError(f"--get-user-env: cannot run {shell}: {exc.strerror}") from None
    _, found, dump = done.stdout.partition(f"\0{MARKER}\0".encode())
    if not found or done.returncode != 0:
        raise UserEnvError(f"--get-user-env: {shell} exited with status {done.returncode}")
    result: dict[str, str] = {}
    for item in dump.split(b"\0"):
        name, eq, value = item.decode("utf-8", "surrogateescape").partition("=")
        if eq and name and name not in _SHELL_OWN:
            result[name] = value
    return result


def merged(launch: Mapping[str, Any], account: Account, env: dict[str, str]) -> dict[str, str]:
    """``env`` over the login environment when the job asked for it, else ``env``."""
    spec = launch.get("get_user_env")
    if not isinstance(spec, str) or not spec:
        return env
    try:
        seconds, mode = parse_get_user_env(spec)
    except ValueError as exc:
        raise UserEnvError(str(exc)) from None
    return {**login_environment(account, timeout=seconds, login=mode == "L"), **env}
