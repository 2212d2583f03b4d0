from django.apps import AppConfig


class HresAppConfig(AppConfig):
    name = "hres"
    verbose_name = "Hierarchical resources"
    default_auto_field = "django.db.models.BigAutoField"
