"""Slurm's words: the grammars of what users and administrators type.

Pure and standard library only, so the CLI, the agent and the controller read a request
and print a value the same way: the license request grammar (``-L``, reservations'
``licenses=``, the planning modes of hierarchical resources), TRES strings
(``cpu=4,mem=8G,gres/gpu=2``), time limits and durations (``1-02:03:04``, ``UNLIMITED``),
``--begin`` times, memory sizes (``4G``) and hostlists (``node[01-03]``).  What the CLI
imports on every run (durations, memory, hostlists) imports nothing itself.
"""
