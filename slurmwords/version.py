"""The Slurm release whose commands and protocol fsched speaks: what ``--version`` prints
and what an agent reports as its node's ``Version=``."""

SLURM_VERSION = "23.11.0"
VERSION_LINE = f"slurm {SLURM_VERSION} (fsched)\n"
