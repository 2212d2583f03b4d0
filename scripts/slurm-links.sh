#!/usr/bin/env bash
# scripts/slurm-links.sh DIR COMMAND...: DIR holds one link per Slurm command name to the
# fsched beside it (DIR/../bin/fsched), which runs the command it is named after. Links are
# relative, so the venv can move; stale entries of another set of names are removed.
set -euo pipefail
dir=$1
shift
mkdir -p "$dir"
for old in "$dir"/*; do
  [[ -L $old ]] && rm -f "$old"
done
for name in "$@"; do
  ln -s ../bin/fsched "$dir/$name"
done
