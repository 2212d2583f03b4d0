"""``fsched server``: the controller (HTTP API, websockets, console; cycles in embedded mode)."""

from __future__ import annotations

import argparse
import os
import sys

from cluster.core.state_files import missing_keys
from config.banner import start_lines
from config.env import envint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fsched server", description="Run the fsched controller.")
    parser.add_argument("--host", default=os.environ.get("FSCHED_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=envint("FSCHED_PORT", 8000))
    parser.add_argument("--workers", type=int, default=1, help="server processes (distributed mode)")
    parser.add_argument("--no-cycles", action="store_true", help="do not run the cycles in this process")
    parser.add_argument("--no-load-config", action="store_true", help="do not (re)read slurm.conf at start")
    parser.add_argument(
        "-R",
        "--recover",
        action="store_true",
        help="recover the saved state fully (slurmctld -R): nodes keep their runtime HRES layers",
    )
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if args.no_cycles:
        os.environ["FSCHED_RUN_CYCLES"] = "0"
    if args.no_load_config:
        os.environ["FSCHED_LOAD_CONFIG"] = "0"
    if args.recover:
        # Read by config.asgi at start (each worker process loads the configuration there).
        os.environ["FSCHED_RECOVER"] = "1"
    if problem := keys_problem():
        # Before any worker starts: each would fail the same way, and a restart cannot help
        # (status 2, as `make run` and the agent's refused key use it).
        print(f"fsched server: error: {problem}", file=sys.stderr, flush=True)
        return 2
    for line in start_lines(args.host, args.port, args.workers):
        # stderr, not logging: uvicorn configures logging only once it runs, and its default
        # level (warning) would hide an INFO line anyway.
        print(f"fsched server: {line}", file=sys.stderr, flush=True)
    import uvicorn  # noqa: PLC0415 - the CLI imports this module lazily

    uvicorn.run(
        "config.asgi:application",
        host=args.host,
        port=args.port,
        workers=args.workers,
        lifespan="on",
        log_level=args.log_level,
        # Access lines are info-level: below that level uvicorn would still format each one.
        access_log=args.log_level.lower() in ("trace", "debug", "info"),
        ws="websockets-sansio",
        ws_max_size=64 * 1024 * 1024,
        timeout_graceful_shutdown=10,
    )
    return 0


def keys_problem() -> str:
    """What is missing for the server to sign sessions and authenticate agents, or ""."""
    from django.conf import settings  # noqa: PLC0415
    from django.core.exceptions import ImproperlyConfigured  # noqa: PLC0415

    state_dir = settings.STATE_DIR  # loads the settings: a mistyped variable stops here, loudly
    try:
        secret_key = settings.SECRET_KEY
    except ImproperlyConfigured:  # Django's wrapper refuses to hand out an empty one
        secret_key = ""
    return missing_keys(state_dir, {"secret_key": secret_key, "agent_key": settings.FSCHED_AGENT_KEY})


if __name__ == "__main__":
    raise SystemExit(main())
