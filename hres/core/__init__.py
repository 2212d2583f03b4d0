"""Hierarchical resources' pure core: resources.yaml, the layers and their planning modes,
the scheduler plugin and what a node keeps across restarts. No Django, no clock."""
