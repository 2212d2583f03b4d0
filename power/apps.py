from django.apps import AppConfig


class PowerAppConfig(AppConfig):
    name = "power"
    verbose_name = "Power saving"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from cluster import extensions  # noqa: PLC0415 - apps are not ready at import
        from power.extension import PowerExtension  # noqa: PLC0415

        extensions.register(PowerExtension())
