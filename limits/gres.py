"""``sbatch --gres`` at submission, and which GRES the accounting counts.

A request is parsed and stored whatever the cluster tracks: the nodes' GRES decide where
it runs.  The limits count only the GRES the cluster tracks as TRES, the tres table
(sacctmgr show tres) and slurm.conf's AccountingStorageTRES (``gres/gpu,gres/gpu:tesla``),
as Slurm creates a TRES for each entry there.  A GRES that is not tracked is accepted and
simply not accounted (Slurm's resource_limits.html: "otherwise requests that ask for the
generic instance of a gres won't be accounted for").
"""

from __future__ import annotations

from cluster.services.errors import ServiceError
from slurmwords.tres import TresError, gres_tres

INVALID_GRES = "Invalid generic resource (gres) specification"


def tracked_gres(accounting_storage_tres: str) -> frozenset[str]:
    """The ``gres/...`` TRES the cluster tracks: the tres table's and slurm.conf's
    AccountingStorageTRES's."""
    from limits.models import Tres  # noqa: PLC0415 - keep this module importable without apps

    names = set(Tres.objects.filter(name__startswith="gres/").values_list("name", flat=True))
    names.update(n.strip() for n in accounting_storage_tres.split(",") if n.strip().startswith("gres/"))
    return frozenset(names)


def check_gres(text: str) -> str:
    """The ``--gres`` request to store (``gpu:2``), or :class:`ServiceError` in Slurm's
    words with the reason on the next line."""
    text = text.strip()
    if not text:
        return ""
    try:
        gres_tres(text)
    except TresError as exc:
        raise ServiceError(f"{INVALID_GRES}\n{exc}", field="gres") from None
    return ",".join(item.strip() for item in text.split(","))
