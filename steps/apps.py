from django.apps import AppConfig


class StepsAppConfig(AppConfig):
    name = "steps"
    verbose_name = "Job steps"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from cluster import extensions  # noqa: PLC0415 - apps are not ready at import
        from steps.extension import StepsExtension  # noqa: PLC0415

        extensions.register(StepsExtension())
