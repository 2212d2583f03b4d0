"""The GPU variables of a job's environment, from the launch's ``gres`` (the devices the
controller gave the job on this node, and its request).

As Slurm's gres/gpu plugin sets them for a job when cgroup's ConstrainDevices is off
(every device stays visible, so the job is told which are its own): CUDA_VISIBLE_DEVICES
and GPU_DEVICE_ORDINAL list the job's devices by their index on the node, and
SLURM_JOB_GPUS the same global indices; SLURM_GPUS_ON_NODE counts them.  SLURM_GPUS, SLURM_GPUS_PER_NODE,
SLURM_GPUS_PER_TASK and SLURM_CPUS_PER_GPU repeat the options, as sbatch exports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def gres_environment(job: Mapping[str, Any]) -> dict[str, str]:
    gres = job.get("gres")
    if not isinstance(gres, Mapping):
        return {}
    env: dict[str, str] = {}
    indices = [
        int(d[2])
        for d in gres.get("devices") or ()
        if isinstance(d, list | tuple) and len(d) == 3 and d[0] == "gpu" and isinstance(d[2], int)
    ]
    if indices:
        listed = ",".join(str(i) for i in sorted(indices))
        env.update(CUDA_VISIBLE_DEVICES=listed, GPU_DEVICE_ORDINAL=listed, SLURM_JOB_GPUS=listed)
        env["SLURM_GPUS_ON_NODE"] = str(len(indices))
    for key, name in (
        ("gpus", "SLURM_GPUS"),
        ("gpus_per_node", "SLURM_GPUS_PER_NODE"),
        ("gpus_per_task", "SLURM_GPUS_PER_TASK"),
        ("cpus_per_gpu", "SLURM_CPUS_PER_GPU"),
    ):
        value = gres.get(key)
        if value not in (None, "", 0):
            env[name] = str(value)
    return env
