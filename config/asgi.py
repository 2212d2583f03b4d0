"""The ASGI application: HTTP (Django, static files), websockets, and the lifespan that
loads the configuration and starts the embedded cycles."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from channels.auth import AuthMiddlewareStack
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.wsgi import get_wsgi_application
from django.urls import path, re_path

from config.parent_death import die_with_parent

# Before Django starts: a worker whose supervisor is killed meanwhile goes too.
die_with_parent()
django_app = get_wsgi_application()

from asgiref.sync import sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402

from cluster import liveness, overview_publisher, publish  # noqa: E402
from cluster.consumers import AgentConsumer, ConsoleConsumer  # noqa: E402
from config import helpers  # noqa: E402
from config.env import envbool  # noqa: E402
from config.http import WSGIOverASGI  # noqa: E402
from config.startup import with_database_retries  # noqa: E402

log = logging.getLogger("fsched.server")


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any other websocket path: refused at the handshake (HTTP 403).  Channels' router
    raised ValueError("No route found") for it, a traceback in the server's log."""

    async def connect(self) -> None:
        await self.close()


http_app = WSGIOverASGI(
    StaticFilesHandler(django_app),
    settings.FSCHED_HTTP_THREADS,
    max_body=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    overlap=bool(settings.DATABASE_URL),
)
router = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": URLRouter(
            [
                path("ws/agent/", AgentConsumer.as_asgi()),
                path(
                    "ws/console/", AllowedHostsOriginValidator(AuthMiddlewareStack(ConsoleConsumer.as_asgi()))
                ),
                path(
                    "ws/overview/",
                    AllowedHostsOriginValidator(
                        AuthMiddlewareStack(overview_publisher.OverviewConsumer.as_asgi())
                    ),
                ),
                re_path(r"", NoSuchSocket.as_asgi()),
            ]
        ),
    }
)


class NotSetUp(RuntimeError):
    """The installation lacks what this start needs: said in one line, with the command
    that makes it."""


class NotMigrated(NotSetUp):
    """The database has no tables yet."""


def _check_migrated() -> None:
    from django.db import connection  # noqa: PLC0415

    if "cluster_node" not in connection.introspection.table_names():
        where = settings.DATABASES["default"].get("NAME")
        raise NotMigrated(f"the database {where} has no fsched tables: run `manage.py migrate` first")


def _startup() -> None:
    from cluster import collector, cycles, log_levels  # noqa: PLC0415
    from cluster.services.configuration import config_load  # noqa: PLC0415
    from config.server import keys_problem  # noqa: PLC0415

    # `fsched server` said so before starting any worker; another ASGI server lands here.
    if problem := keys_problem():
        raise NotSetUp(problem)
    log_levels.follow()  # SlurmctldDebug and scontrol setdebug, from the configuration read next
    if envbool("FSCHED_LOAD_CONFIG", True):
        recover = envbool("FSCHED_RECOVER", False)

        def load() -> None:
            _check_migrated()
            config_load(actor="slurmctld", recover=recover)

        with_database_retries(load, wait_for=settings.FSCHED_STARTUP_DB_WAIT)
    # A worker lives long and holds the passes' kept state (cluster/collector.py).
    collector.tune()
    if settings.FSCHED_RUN_CYCLES:
        cycles.start_embedded()
    # After the configuration is loaded: helpers read it from the database.
    http_app.helpers = helpers.start(settings.FSCHED_HTTP_HELPERS)
    # From now on an agent that says nothing is silent, not unheard (cluster/liveness.py).
    liveness.listening()


def _shutdown() -> None:
    from cluster import cycles  # noqa: PLC0415
    from power import services as power_services  # noqa: PLC0415

    liveness.stopped()
    helpers.stop(http_app.helpers)
    http_app.helpers = []
    cycles.stop_embedded()
    # Spawned power programs get up to ten seconds, then are left running; the
    # SLURM_RESUME_FILEs go away (Slurm's power_save.html, "Fault Tolerance").
    power_services.shutdown()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "lifespan":
        await router(scope, receive, send)
        return
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            publish.bind_server_loop(asyncio.get_running_loop())
            try:
                await sync_to_async(_startup, thread_sensitive=False)()
            except NotSetUp as exc:
                log.error("start-up failed: %s", exc)
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            except Exception as exc:
                log.exception("start-up failed")
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            overview_publisher.start_with_server()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await overview_publisher.stop()
            await sync_to_async(_shutdown, thread_sensitive=False)()
            await send({"type": "lifespan.shutdown.complete"})
            return
