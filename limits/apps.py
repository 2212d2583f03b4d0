from __future__ import annotations

from django.apps import AppConfig


class LimitsAppConfig(AppConfig):
    name = "limits"
    verbose_name = "Accounting and limits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from auditlog.registry import auditlog  # noqa: PLC0415

        from limits.models import QOS, Account, Association, Cluster, Coordinator, LimitsUser  # noqa: PLC0415

        # Every limit change is audited with before/after (the admin's history and the
        # console's audit log); usage counters change every cycle and are not.
        for model in (Cluster, Account, Association, QOS, LimitsUser, Coordinator):
            auditlog.register(model)

        from cluster import extensions  # noqa: PLC0415 - apps are not ready at import
        from limits.extension import LimitsExtension  # noqa: PLC0415

        extensions.register(LimitsExtension())

        from django.db.models.signals import post_migrate  # noqa: PLC0415

        # The submit limits' counts follow the job table's triggers: after every migrate.
        post_migrate.connect(_install_submit_counts, sender=self, dispatch_uid="fsched-submit-counts")


def _install_submit_counts(using: str, **_: object) -> None:
    from django.db import connections  # noqa: PLC0415

    from limits import submit_counts  # noqa: PLC0415

    submit_counts.install(connections[using])
