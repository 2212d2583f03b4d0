"""What squeue's, sinfo's and scontrol's ``--json`` take besides the records: the
``meta`` (the client's terminal and names from this process, the cluster and its
accounting plugin from the controller's configuration, ``GET /api/config/``) and the
nodes' slurmd port."""

from __future__ import annotations

from slurmwords import data_parser, data_parser_client
from slurmwords.version import SLURM_VERSION

SLURMD_PORT = 6818  # slurm.conf's SlurmdPort when unset


class Context:
    """The controller's configuration as the JSON needs it, read once per command."""

    __slots__ = ("accounting", "cluster", "command", "cr_cpu", "slurmd_port")

    def __init__(self, client, command: list[str]) -> None:
        from cli.client import ApiError  # noqa: PLC0415

        try:
            config = client.get("/api/config/") or {}
        except ApiError:  # an unset key prints "": so does an unreadable configuration
            config = {}
        options = config.get("options") or {}
        port = str(options.get("SlurmdPort") or "")
        self.command = command
        self.cluster = config.get("cluster_name") or ""
        accounting = str(options.get("AccountingStorageType") or "")
        # read_config.c drops accounting_storage/none as if the key were unset.
        self.accounting = "" if "none" in accounting.lower() else accounting
        self.slurmd_port = int(port) if port.isdigit() else SLURMD_PORT
        # CR_CPU counts a job's CPUs, CR_Core (and Socket) its cores: job_resources says which.
        select = str(options.get("SelectTypeParameters") or "").upper().split(",")
        self.cr_cpu = any(word.startswith("CR_CPU") for word in select)

    def meta(self) -> dict:
        user, group = data_parser_client.user_and_group()
        return data_parser.meta(
            self.command,
            user=user,
            group=group,
            cluster=self.cluster,
            version=SLURM_VERSION,
            source=data_parser_client.terminal(),
            accounting_storage=self.accounting,
        )
