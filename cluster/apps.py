from django.apps import AppConfig
from django.conf import settings

from cluster.core.state_files import secure_state_dir


class ClusterAppConfig(AppConfig):
    name = "cluster"
    verbose_name = "Cluster"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every process that sets Django up tightens an existing state directory and its keys,
        # which an older version or an administrator may have left readable; it creates
        # nothing: that is the bootstrap's (cluster.core.state_files.create_keys).
        secure_state_dir(settings.STATE_DIR, create=False)

        from auditlog.registry import auditlog  # noqa: PLC0415

        from cluster.models import Node, Partition  # noqa: PLC0415

        # Jobs change state thousands of times a minute through the scheduler; what people
        # change on them is in Event (with the user).  Nodes and partitions are audited.
        auditlog.register(
            Node,
            exclude_fields=["last_contact", "cpu_load", "free_mem", "alloc_cpus", "alloc_mem", "last_busy"],
        )
        auditlog.register(Partition)

        from cluster import triggers  # noqa: PLC0415

        if settings.DISTRIBUTED:
            # The passes run in Celery: every process asks for them there. An embedded
            # cycles thread (FSCHED_RUN_CYCLES=1) installs itself over this at start.
            from cluster.tasks import CeleryTriggers  # noqa: PLC0415

            triggers.install(CeleryTriggers())

        from django.core.signals import request_finished, request_started  # noqa: PLC0415

        from cluster.models import ClusterConfig  # noqa: PLC0415

        # A revision the token check noted serves its own request only (ClusterConfig.current).
        for signal in (request_started, request_finished):
            signal.connect(ClusterConfig.forget_noted_revision, dispatch_uid="fsched-noted-revision")

        from django.test.signals import setting_changed  # noqa: PLC0415

        from cluster import extensions  # noqa: PLC0415
        from cluster.services.core_extensions import (  # noqa: PLC0415
            ArraysExtension,
            LicensesExtension,
            ReservationsExtension,
        )
        from cluster.services.gres import GresExtension  # noqa: PLC0415 - models are loaded now

        for ext in (ReservationsExtension(), LicensesExtension(), ArraysExtension(), GresExtension()):
            extensions.register(ext)
        setting_changed.connect(extensions.setting_changed)

        from django.db.backends.signals import connection_created  # noqa: PLC0415
        from django.db.models.signals import post_migrate  # noqa: PLC0415

        from cluster.services import pass_snapshot  # noqa: PLC0415

        # The kept pass snapshot sees every statement of every connection, and forgets what
        # it read when a transaction rolls back.
        connection_created.connect(pass_snapshot.watch, dispatch_uid="fsched-pass-snapshot")
        # ... and, where processes share an SQLite file, the database logs every process's
        # writes for it: the triggers follow the tables, so after every migrate.
        post_migrate.connect(_install_change_log, sender=self, dispatch_uid="fsched-change-log")


def _install_change_log(using: str, **_: object) -> None:
    from django.db import connections  # noqa: PLC0415

    from cluster.services import change_log  # noqa: PLC0415

    change_log.install(connections[using])
