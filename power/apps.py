from django.apps import AppConfig


class PowerAppConfig(AppConfig):
    name = "power"
    verbose_name = "Power saving"
    default_auto_field = "django.db.models.BigAutoField"
