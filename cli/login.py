"""``fsched login [--url U] [--username U]``: get an API token, save it for the other commands.

Asks for the password (``getpass``), ``POST /api/auth/token/`` and writes
``{"url", "token", "username"}`` to the credentials file (mode 0600), which
``cli.client`` reads on every later command.  Each login gets a new token, which expires
(the controller's FSCHED_TOKEN_TTL_DAYS): log in again then.
"""

from __future__ import annotations

import sys

from cli.fmt import make_parser

PROG = "fsched login"


def build_parser():
    p = make_parser(PROG, usage="%(prog)s [--url URL] [--username USER]")
    p.add_argument(
        "--url", help="controller URL (default: $FSCHED_URL, the saved one, http://127.0.0.1:8000)"
    )
    p.add_argument("--username", "-u", help="user name (default: the saved one, else $USER)")
    p.add_argument("--password-stdin", action="store_true", help="read the password from stdin (for scripts)")
    return p


def main(argv: list[str]) -> int:
    import getpass  # noqa: PLC0415

    from cli.client import ApiError, Client, current_user, load_config, save_config, settings  # noqa: PLC0415

    ns = build_parser().parse_args(argv)
    url, _token, saved_user = settings()
    url = (ns.url or url).rstrip("/")
    username = ns.username or saved_user or current_user()
    if ns.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"Password for {username} at {url}: ")
    client = Client(url=url, token="")
    try:
        answer = client.post("/api/auth/token/", {"username": username, "password": password})
    except ApiError as exc:
        sys.stderr.write(f"fsched: error: login failed: {exc.message}\n")
        return 1
    token = answer.get("token") if isinstance(answer, dict) else None
    if not token:
        sys.stderr.write("fsched: error: login failed: no token in the answer\n")
        return 1
    config = {**load_config(), "url": url, "token": token, "username": username}
    path = save_config(config)
    expires = answer.get("expires")
    until = f" (the token expires {expires})" if isinstance(expires, str) and expires else ""
    sys.stdout.write(f"Logged in to {url} as {username}; credentials saved in {path}{until}\n")
    return 0
