"""The ``fsched`` command line: Slurm's user commands over fsched's REST API.

Start-up latency is a requirement (a ``sbatch --wrap`` round trip under 50 ms
including Python's start), so this package imports only the standard library
and loads a command's module only when that command runs; see ``cli/main.py``.
The common paths import neither argparse (only help and errors need it:
``cli/fastargs.py``) nor ``json`` (``cli/jsonwire.py``).
"""
