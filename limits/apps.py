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
