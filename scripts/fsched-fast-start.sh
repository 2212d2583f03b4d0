#!/usr/bin/env bash
# scripts/fsched-fast-start.sh BIN: after pip has installed BIN/fsched, start it with
# `python -S` (scripts/fsched says why, and how it then finds fsched's packages), and compile
# the client commands' modules now rather than at their first run, which may not be allowed
# to write into the checkout (a compute node's shared install).
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/.." && pwd)
command=$bin/fsched
first=$(head -n 1 "$command")
if [[ $first != '#!'*python* ]]; then
  echo "$0: $command does not start with '#!...python': left as it is" >&2
  exit 1
fi
# pip writes the interpreter alone; a second run finds its own -S and writes the same line.
interpreter=${first%% *}
{
  printf '%s -S\n' "$interpreter"
  tail -n +2 "$command"
} >"$command.new"
chmod 755 "$command.new"
mv "$command.new" "$command"
"$bin/python" -m compileall -q "$root/cli" "$root/slurmwords"
