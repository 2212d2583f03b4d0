from django.apps import AppConfig


class HresAppConfig(AppConfig):
    name = "hres"
    verbose_name = "Hierarchical resources"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from cluster import extensions  # noqa: PLC0415 - apps are not ready at import
        from hres.extension import HresExtension  # noqa: PLC0415

        extensions.register(HresExtension())
