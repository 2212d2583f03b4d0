"""``sbatch --gres`` at submission: the request parsed and, when limits are enforced, each
GRES checked against the TRES the cluster tracks (Slurm's resource_limits.html: a GRES limit
is a ``gres/<name>`` TRES; Slurm cannot limit what it does not track, so a request for
an untracked GRES is refused rather than run unlimited).

The tracked TRES are the tres table (sacctmgr show tres) and slurm.conf's
AccountingStorageTRES (``gres/gpu,license/fluent``), as Slurm creates a TRES for each
entry there.
"""

from __future__ import annotations

from collections.abc import Mapping

from cluster.services.errors import ServiceError
from limits import selectors
from slurmwords.tres import TresError, gres_tres

INVALID_GRES = "Invalid generic resource (gres) specification"


def tracked_tres(options: Mapping[str, object]) -> frozenset[str]:
    """Every TRES name the cluster tracks: the tres table and AccountingStorageTRES."""
    from limits.models import Tres  # noqa: PLC0415 - keep this module importable without apps

    names = set(Tres.objects.values_list("name", flat=True))
    configured = selectors.option(options, "AccountingStorageTRES")
    names.update(n.strip() for n in configured.split(",") if n.strip())
    return frozenset(names)


def check_gres(text: str, *, enforce_limits: bool, options: Mapping[str, object]) -> str:
    """The ``--gres`` request to store (``gpu:2``), or :class:`ServiceError` in Slurm's
    words with the reason on the next line."""
    text = text.strip()
    if not text:
        return ""
    try:
        per_node = gres_tres(text)
    except TresError as exc:
        raise ServiceError(f"{INVALID_GRES}\n{exc}", field="gres") from None
    if enforce_limits:
        known = tracked_tres(options)
        # The generic name must be tracked; a type (gpu:tesla) is tracked through it.
        missing = sorted(n for n in per_node if ":" not in n and n not in known)
        if missing:
            raise ServiceError(
                f"{INVALID_GRES}\n{', '.join(missing)} is not a TRES of this cluster "
                "(add it to AccountingStorageTRES in slurm.conf)",
                field="gres",
            )
    return ",".join(item.strip() for item in text.split(","))
