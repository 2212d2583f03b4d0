"""srun's ``--cpu-bind`` (and SLURM_CPU_BIND), read as slurm_verify_cpu_bind reads it.

fsched binds each task to its own share of the step's CPUs on its node, which is Slurm's
task/affinity binding to cores, threads or sockets (the units make no difference to a
share of whole CPUs); ``none`` leaves each task the step's CPUs on the node; ``verbose``
has each task's stderr say its mask as slurmstepd does. ``map_cpu``/``mask_cpu``/
``map_ldom``/``mask_ldom`` (CPUs named by hand) are refused.
"""

from __future__ import annotations

# slurm_verify_cpu_bind's words, and fsched's unit for each (what the verbose line says).
UNITS = {
    "socket": "sockets", "sockets": "sockets", "core": "cores", "cores": "cores",
    "thread": "threads", "threads": "threads", "ldom": "ldoms", "ldoms": "ldoms",
}  # fmt: skip
TYPES = {"no": "none", "none": "none", "rank": "rank", "rank_ldom": "rank_ldom", "one_thread": ""}
BY_HAND = ("map_cpu", "mapcpu", "mask_cpu", "maskcpu", "map_ldom", "mapldom", "mask_ldom", "maskldom")


class CpuBindError(ValueError):
    pass


def parse(arg: str) -> dict[str, object]:
    """The step request's fields: ``cpu_bind`` (``none``, ``rank``, ``cores`` ... or "")
    and ``cpu_bind_verbose``."""
    kind, units, verbose = "", "", False
    for word in arg.split(","):
        low = word.lower()
        if low in ("q", "quiet"):
            verbose = False
        elif low in ("v", "verbose"):
            verbose = True
        elif low in TYPES:
            kind = TYPES[low] or kind
        elif low in UNITS:
            units = UNITS[low]
        elif low.startswith(BY_HAND):
            raise CpuBindError(
                f"--cpu-bind={word.split(':')[0]}: CPUs named by hand are not supported by fsched"
            )
        else:
            raise CpuBindError(f'unrecognized --cpu-bind argument "{word}"')
    return {"cpu_bind": kind or units, "cpu_bind_verbose": verbose}
