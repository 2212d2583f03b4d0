from django.apps import AppConfig


class LoadAppConfig(AppConfig):
    name = "load"
    verbose_name = "Load thresholds"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from cluster import extensions  # noqa: PLC0415 - apps are not ready at import
        from load.extension import LoadExtension  # noqa: PLC0415

        extensions.register(LoadExtension())
