from django.apps import AppConfig


class ClusterConfig(AppConfig):
    name = "cluster"
    verbose_name = "Cluster"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from auditlog.registry import auditlog  # noqa: PLC0415

        from cluster.models import Node, Partition  # noqa: PLC0415

        # Jobs change state thousands of times a minute through the scheduler; what people
        # change on them is in Event (with the user).  Nodes and partitions are audited.
        auditlog.register(
            Node,
            exclude_fields=["last_contact", "cpu_load", "free_mem", "alloc_cpus", "alloc_mem", "last_busy"],
        )
        auditlog.register(Partition)
