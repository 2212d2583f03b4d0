#!/usr/bin/env bash
# Prints the interpreter the venvs are made from (the Makefile's PY): the distribution's
# Python 3.11 when it has venv and ensurepip (Debian's package python3.11-venv), else the
# first python3.11 or python3 on PATH. The locks pin Python 3.11 wheels.
#
# Why the distribution's first: Debian's Python is an optimised build with libpython linked
# into the executable; pyenv's default build is unoptimised and loads a shared libpython.
# The same code ran the simulator bench 1.33x faster under Debian's 3.11.2 than under
# pyenv's 3.11.7, and an sbatch in a quarter fewer instructions
# (docs/profile-demo-cluster.md).
set -euo pipefail
usable() {
  command -v "$1" >/dev/null 2>&1 &&
    "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null
}
for py in /usr/bin/python3.11 /usr/bin/python3 python3.11 python3; do
  if usable "$py"; then
    echo "$py"
    exit 0
  fi
done
echo python3
