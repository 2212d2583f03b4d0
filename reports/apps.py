from django.apps import AppConfig


class ReportsAppConfig(AppConfig):
    name = "reports"
    verbose_name = "Reports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from cluster import extensions  # noqa: PLC0415 - apps are not ready at import
        from reports.extension import ReportsExtension  # noqa: PLC0415

        extensions.register(ReportsExtension())
        from auditlog.registry import auditlog  # noqa: PLC0415

        from reports.models import SavedReport  # noqa: PLC0415

        auditlog.register(SavedReport)
