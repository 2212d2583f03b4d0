from __future__ import annotations

from django.apps import AppConfig


class WhatifConfig(AppConfig):
    name = "whatif"
    verbose_name = "What-if simulations"
    default_auto_field = "django.db.models.BigAutoField"
