from __future__ import annotations

from django.apps import AppConfig


class JobSubmitConfig(AppConfig):
    name = "jobsubmit"
    verbose_name = "Job submit plugins"

    def ready(self) -> None:
        from cluster import extensions  # noqa: PLC0415 - apps are ready only now
        from jobsubmit.extension import JobSubmitExtension  # noqa: PLC0415

        extensions.register(JobSubmitExtension())
