from django.apps import AppConfig


class GuidesAppConfig(AppConfig):
    name = "guides"
    verbose_name = "Guides"
