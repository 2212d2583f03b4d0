"""The simulator's settings (``python -m simulator``): the controller's own, with a store of
its own in memory and nothing that talks to the outside.

Same INSTALLED_APPS and FSCHED_EXTENSIONS as the controller, so every registered extension
runs; SQLite in memory (the simulator is one thread: Django's connection per thread is the
one connection); no Redis, no Celery, no channel layer (the simulator takes the agents'
commands itself, cluster.publish.install_agents). ``simulator.__main__`` sets
FSCHED_STATE_DIR to a temporary directory before this is imported.
"""

from __future__ import annotations

import secrets

from config.settings import *  # noqa: F403 - the controller's settings, then what differs
from config.settings import INSTALLED_APPS as _APPS

INSTALLED_APPS = list(_APPS)
DATABASES = {
    "default": {
        "ENGINE": "config.sqlite",
        "NAME": ":memory:",
        "CONN_MAX_AGE": None,
        "OPTIONS": {"transaction_mode": "IMMEDIATE"},
    }
}
DISTRIBUTED = False
REDIS_URL = ""
CHANNEL_LAYERS: dict[str, object] = {}
CELERY_BROKER_URL = "memory://"
FSCHED_RUN_CYCLES = False  # the simulator runs the cycles on its own clock
FSCHED_HTTP_HELPERS = 0
# Nobody signs in to a simulation; Django refuses an empty key.
SECRET_KEY = secrets.token_urlsafe(50)
FSCHED_AGENT_KEY = secrets.token_urlsafe(32)
# Job mail of a simulated cluster goes nowhere.
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "ERROR"},
}
