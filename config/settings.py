"""Settings, all from the environment.

Embedded (default): SQLite in FSCHED_STATE_DIR, in-memory channel layer, the cycles in a
thread of the server process.  Distributed: FSCHED_DATABASE_URL (PostgreSQL) and
FSCHED_REDIS_URL switch to PostgreSQL, the Redis channel layer and Celery.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

from cluster.core.state_files import read_key
from config.env import envbool, envfloat, envint, envlevel, envnetworks, envzone

BASE_DIR = Path(__file__).resolve().parent.parent


STATE_DIR = Path(os.environ.get("FSCHED_STATE_DIR", BASE_DIR / "var")).resolve()
CONF_DIR = Path(os.environ.get("FSCHED_CONF_DIR", BASE_DIR / "examples" / "demo")).resolve()

# The session signing key and the cluster key agents authenticate with: from the
# environment, else the state directory's, which `manage.py fsched_bootstrap` creates.
# Importing the settings only reads, so that migrate, check and the bootstrap itself run
# before the keys exist; a key still empty stops `fsched server` with what to run
# (cluster.core.state_files.missing_keys), and Django refuses to sign with an empty SECRET_KEY.
SECRET_KEY = os.environ.get("FSCHED_SECRET_KEY") or read_key(STATE_DIR / "secret_key")
FSCHED_AGENT_KEY = os.environ.get("FSCHED_AGENT_KEY") or read_key(STATE_DIR / "agent_key")
DEBUG = envbool("FSCHED_DEBUG", False)
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("FSCHED_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",")
    if h.strip()
]
# Origins (scheme://host[:port]) a browser may post forms from: the console's public URL
# when it is served under another name than the server's, behind a proxy.
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("FSCHED_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]
# Behind a reverse proxy that terminates TLS (docs/nginx.md): trust its X-Forwarded-Proto
# and X-Forwarded-Host. Only where the proxy is the sole way in, or a client could claim
# HTTPS itself.
FSCHED_BEHIND_PROXY = envbool("FSCHED_BEHIND_PROXY", False)
if FSCHED_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    USE_X_FORWARDED_HOST = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI's files from a package: /api/docs/ fetches nothing from the internet.
    "drf_spectacular_sidecar",
    "django_htmx",
    "auditlog",
    "django_celery_beat",
    "axes",
    "channels",
    "cluster",
    "hres",
    "power",
    "limits",
    "load",
    "steps",
    "reports",
    "cycles",
    "guides",
    "jobsubmit",
    "whatif",
]

MIDDLEWARE = [
    # First, so that it sees every later middleware's writes: a request whose database is
    # unreachable answers 503 and says whether anything was stored (cluster/unavailable.py).
    "cluster.unavailable.DatabaseUnavailableMiddleware",
    # Early, so that every later middleware's log lines and audit entries carry the id.
    "config.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.gzip.GZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.audit.AuditMiddleware",
    # Last, as django-axes asks: it turns a lockout flagged during the view into its answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = os.environ.get("FSCHED_DATABASE_URL", "")
if DATABASE_URL:
    # Connections are checked before reuse, so one left broken by a PostgreSQL restart is
    # replaced instead of failing the next request or agent message.
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # The health check without a round trip while the server has said nothing.
        DATABASES["default"]["ENGINE"] = "config.postgresql"
else:
    DATABASES = {
        "default": {
            "ENGINE": "config.sqlite",
            "NAME": os.environ.get("FSCHED_SQLITE_PATH", str(STATE_DIR / "fsched.sqlite3")),
            # Keep connections: reopening SQLite (and its PRAGMAs) per agent message costs more
            # than the message.
            "CONN_MAX_AGE": None,
            # The scheduler thread, the agent consumer and API requests write concurrently:
            # wait on the lock instead of failing, and take the write lock up front so a
            # read-then-write transaction cannot deadlock on upgrade.
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("FSCHED_REDIS_URL", "")
DISTRIBUTED = bool(REDIS_URL)
# channels_redis waits on its queues with a 5 s blocking pop; redis-py 8 also defaults
# to a 5 s read timeout, so an idle websocket's wait failed ("Timeout reading from ...")
# and dropped its connection. Reads wait longer than the pop, and keepalive with a health
# check finds a connection a Redis restart left dead.
REDIS_SOCKET_TIMEOUT = envfloat("FSCHED_REDIS_SOCKET_TIMEOUT", 30)
# The channel layer's bounds. A group_send to a channel holding ``capacity`` messages
# drops the message silently: the agent consumer of an agent hosting many nodes gets one
# message per node a pass starts jobs on (1,000 at once for a simulate-exec agent), and
# channels' default of 100 lost launches. Memory stays bounded by the expiry (60 s).
# A group membership older than ``group_expiry`` is dropped by the layer: the consumer
# renews its nodes' groups long before (cluster.consumers.GROUP_RENEWAL), but the default
# day is kept as the bound for the memberships of a server that died without leaving.
CHANNEL_CAPACITY = envint("FSCHED_CHANNEL_CAPACITY", 100_000)
CHANNEL_GROUP_EXPIRY = 86400
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "capacity": CHANNEL_CAPACITY,
                "group_expiry": CHANNEL_GROUP_EXPIRY,
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": REDIS_SOCKET_TIMEOUT,
                        "socket_connect_timeout": 5,
                        "socket_keepalive": True,
                        "health_check_interval": 15,
                        "retry_on_timeout": True,
                    }
                ]
            },
        }
    }
    CELERY_BROKER_URL = REDIS_URL
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "cluster.publish_layer.JsonCopyInMemoryChannelLayer",
            "CONFIG": {"capacity": CHANNEL_CAPACITY, "group_expiry": CHANNEL_GROUP_EXPIRY},
        }
    }
    CELERY_BROKER_URL = "memory://"
CELERY_TASK_IGNORE_RESULT = True
# Beat reads the cycles' rows (the cycles app: PeriodicTask rows an administrator edits)
# and its bookkeeping lives there too, not in a file.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# The cluster core's extensions, in the order it calls their hooks (cluster/extensions.py):
# the order of the scheduler's gates, the first that holds a job giving its reason.  An
# entry is the name an app registers, or the dotted path of a ClusterExtension class.
FSCHED_EXTENSIONS = [
    "reservations", "licenses", "limits", "arrays", "gres", "hres", "power", "load", "reports",
    "job_submit", "steps",
]  # fmt: skip

# How often the cycles run when nothing triggers them (seconds).
FSCHED_SCHED_INTERVAL = envfloat("FSCHED_SCHED_INTERVAL", 2)
FSCHED_HEALTH_INTERVAL = envfloat("FSCHED_HEALTH_INTERVAL", 2)
# Backfill plans for the whole queue, so it runs on its own interval (Slurm's bf_interval).
FSCHED_BACKFILL_INTERVAL = envfloat("FSCHED_BACKFILL_INTERVAL", 5)
# Seconds between polls of the power-save cycle, which acts only when it is due.
FSCHED_POWER_INTERVAL = envfloat("FSCHED_POWER_INTERVAL", 1)
# Seconds between checks of the nodes' load against their partitions' load thresholds
# (fsched's own, docs/load-thresholds.md: 30, as they are specified; shorter for tests).
FSCHED_LOAD_INTERVAL = envfloat("FSCHED_LOAD_INTERVAL", 30)
# The node page's load chart: one sample per node at most every this many seconds (and
# at most one per check), kept this many hours (docs/load-thresholds.md, "The console").
FSCHED_LOAD_SAMPLE_INTERVAL = envfloat("FSCHED_LOAD_SAMPLE_INTERVAL", 60)
FSCHED_LOAD_HISTORY_HOURS = envfloat("FSCHED_LOAD_HISTORY_HOURS", 24)
# Seconds between usage accounting cycles (charge running jobs, decay; see Slurm's
# resource_limits.html).
FSCHED_USAGE_INTERVAL = envfloat("FSCHED_USAGE_INTERVAL", 30)
# Seconds between report rollups (reports/): each run rolls the hours that ended since.
FSCHED_ROLLUP_INTERVAL = envfloat("FSCHED_ROLLUP_INTERVAL", 300)
# How long raw job rows and events are kept once rolled up, in slurmdbd.conf's words and
# spelling (PurgeJobAfter, PurgeEventAfter: "12month", "30days", "720hours"); empty keeps
# them for ever.
FSCHED_PURGE_JOB_AFTER = os.environ.get("FSCHED_PURGE_JOB_AFTER", "")
FSCHED_PURGE_EVENT_AFTER = os.environ.get("FSCHED_PURGE_EVENT_AFTER", "")
# Scheduled reports are emailed through this SMTP server when it is set (empty: kept for
# download only).
EMAIL_HOST = os.environ.get("FSCHED_EMAIL_HOST", "")
EMAIL_PORT = envint("FSCHED_EMAIL_PORT", 25)
DEFAULT_FROM_EMAIL = os.environ.get("FSCHED_EMAIL_FROM", "fsched@localhost")
# Job mail (sbatch --mail-type): written to the server's output unless an SMTP server is set.
EMAIL_BACKEND = os.environ.get(
    "FSCHED_EMAIL_BACKEND", f"django.core.mail.backends.{'smtp' if EMAIL_HOST else 'console'}.EmailBackend"
)
# Threads that run HTTP requests' Django code in a server process.
FSCHED_HTTP_THREADS = envint("FSCHED_HTTP_THREADS", 4)
# Embedded mode: child processes serving API reads and submissions on the other cores
# (config.helpers), one core left to the server process.  Distributed mode runs several
# server processes instead.  Measured on 2 cores (bench.cluster_throughput, medians):
# with 1 helper 787 and 805 jobs/s submitted, single jobs end to end 149 and 123 jobs/s;
# with 2 helpers 816 and 123; without, 394 to 572 and 131 (the server's one core).
_CORES = os.cpu_count() or 1
FSCHED_HTTP_HELPERS = envint("FSCHED_HTTP_HELPERS", min(4, _CORES - 1) if not DISTRIBUTED else 0)
# Seconds an event-triggered pass waits so that a burst of events costs one pass
# (Slurm's sched_min_interval).
FSCHED_SCHED_MIN_INTERVAL = envfloat("FSCHED_SCHED_MIN_INTERVAL", 0.02)
# How long a starting server tries again while its database fails (config/startup.py).
FSCHED_STARTUP_DB_WAIT = envfloat("FSCHED_STARTUP_DB_WAIT", 60)
# Jobs per partition an event-triggered pass considers (Slurm's default_queue_depth).
FSCHED_QUEUE_DEPTH = envint("FSCHED_QUEUE_DEPTH", 100)
# Embedded mode runs the cycles in a thread of the server process unless told not to
# (tests that drive the cycles by hand turn it off).
FSCHED_RUN_CYCLES = envbool("FSCHED_RUN_CYCLES", not DISTRIBUTED)

# Who may read /metrics (docs/metrics.md): a scraper sending this bearer token, or a client
# in these networks; anyone else gets 403.
FSCHED_METRICS_TOKEN = os.environ.get("FSCHED_METRICS_TOKEN", "")
FSCHED_METRICS_ALLOW = envnetworks("FSCHED_METRICS_ALLOW", "127.0.0.1/32,::1/128")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]
# django-axes checks every password login (the admin's form and POST /api/auth/token/)
# before the model backend tries it.
# FSCHED_AUTH_BACKENDS adds single sign-on or a directory (docs/authentication.md), tried
# before the local accounts: e.g. mozilla_django_oidc.auth.OIDCAuthenticationBackend or
# django_auth_ldap.backend.LDAPBackend, whose own settings come from FSCHED_AUTH_SETTINGS.
FSCHED_AUTH_BACKENDS = [b.strip() for b in os.environ.get("FSCHED_AUTH_BACKENDS", "").split(",") if b.strip()]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    *FSCHED_AUTH_BACKENDS,
    "django.contrib.auth.backends.ModelBackend",
]
if any(b.startswith("mozilla_django_oidc.") for b in FSCHED_AUTH_BACKENDS):
    INSTALLED_APPS.append("mozilla_django_oidc")
# A module whose UPPER_CASE names become settings (OIDC_RP_CLIENT_ID, AUTH_LDAP_SERVER_URI...).
FSCHED_AUTH_SETTINGS = os.environ.get("FSCHED_AUTH_SETTINGS", "")
if FSCHED_AUTH_SETTINGS:
    import importlib

    _auth = importlib.import_module(FSCHED_AUTH_SETTINGS)
    globals().update({k: v for k, v in vars(_auth).items() if k.isupper()})
# Failures are counted per user name and client address together: users of a cluster log
# in from the same few login nodes, so counting per address alone would let one user's
# typos lock out everyone on that node.
AXES_FAILURE_LIMIT = envint("FSCHED_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=envint("FSCHED_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "cluster.api.tokens.lockout_response"
# Days an API token issued by a login stays valid (0: until revoked).
FSCHED_TOKEN_TTL_DAYS = envint("FSCHED_TOKEN_TTL_DAYS", 30)
# A console session ends this long after login, used or not.
SESSION_COOKIE_AGE = envint("FSCHED_SESSION_HOURS", 12) * 3600
SESSION_COOKIE_HTTPONLY = True
# Behind TLS (FSCHED_HTTPS=1) cookies travel only over it.
FSCHED_HTTPS = envbool("FSCHED_HTTPS", False)
SESSION_COOKIE_SECURE = FSCHED_HTTPS
CSRF_COOKIE_SECURE = FSCHED_HTTPS
LANGUAGE_CODE = "en-us"
# The controller's local time (TZ), as Slurm's daemons use it: times shown, and the
# calendar boundaries of PriorityUsageResetPeriod.
TIME_ZONE = envzone("TZ", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = STATE_DIR / "static"
# The console's own login page, for every user; the admin keeps its staff-only one.
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# A batch script may reach Slurm's 4 MB max_script_size; the JSON that carries it is larger.
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("FSCHED_MAX_BODY", 6 * 1024 * 1024)

REST_FRAMEWORK = {
    # Bounded nesting and no lone surrogates, for every view (cluster.api.parsers).
    "DEFAULT_PARSER_CLASSES": [
        "cluster.api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "cluster.api.auth.TokenAuthentication",
        "cluster.api.job_credential_auth.JobCredentialAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "cluster.api.pagination.LimitOffsetPagination",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "cluster.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if envbool("FSCHED_BROWSABLE_API", True) else []),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "fsched API",
    "DESCRIPTION": "Jobs, nodes, partitions and configuration of an fsched cluster.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema maps every endpoint and field: for the cluster's users, not for anyone.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # drf-spectacular's default is a CDN's "@latest"; the sidecar package serves the files.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Each audit entry's correlation id is the request's X-Request-ID (config/request_id.py).
AUDITLOG_CID_GETTER = "config.request_id.current_request_id"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.request_id.RequestIdLogFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": envlevel("FSCHED_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "uvicorn.access": {"level": "WARNING"},
        # axes narrates every login at INFO; its WARNINGs (failures, lockouts) are the record.
        "axes": {"level": "WARNING"},
    },
}
