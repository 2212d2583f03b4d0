"""Slurm's words: the grammars of what users and administrators type.

Pure and standard library only, so the CLI, the agent and the controller read a request
the same way: the license request grammar (``-L``, reservations' ``licenses=``, the
planning modes of hierarchical resources) and TRES strings (``cpu=4,mem=8G,gres/gpu=2``).
"""
