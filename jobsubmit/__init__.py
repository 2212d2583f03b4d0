"""Slurm's job_submit/lua plugin: ``JobSubmitPlugins=lua`` and ``job_submit.lua`` beside
slurm.conf (docs/lua.md)."""
