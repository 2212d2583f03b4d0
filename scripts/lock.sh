#!/usr/bin/env bash
# The hashed locks that `make setup` and `make agent` install:
#   scripts/lock.sh lock    regenerate requirements.lock, requirements-agent.lock and
#                           requirements-tools.lock
#   scripts/lock.sh check   exit 1 when any is out of date with its input
# requirements.lock pins requirements.txt; requirements-agent.lock pins requirements-agent.txt
# at the versions of requirements.lock (given to pip-compile as a constraint);
# requirements-tools.lock pins requirements-tools.txt on its own (the tools' venv,
# .venv-tools, shares nothing with .venv). All are for
# Python 3.11 on Linux and need network to PyPI. pip-tools runs from a venv of its own, never
# from .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian 12's own Python (3.11.2) by default: an older 3.11 needs more (redis-py wants
# async-timeout below 3.11.3), so its lock installs everywhere, and the README's
# controller venv is made from it.
if [[ -z ${PY:-} ]]; then
  PY=python3.11
  [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' &&
    PY=/usr/bin/python3
fi
PIPTOOLS=pip-tools==7.6.2  # pinned: another version may word or order the lock differently
COMPILE_OPTS=(--quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url
  --no-emit-find-links --no-emit-trusted-host)

die() {
  echo "lock.sh: $*" >&2
  exit 1
}

mode=${1:-}
[[ $mode == lock || $mode == check ]] || die "usage: scripts/lock.sh lock|check"

"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11) or sys.platform != "linux")' 2>/dev/null ||
  die "the locks are for Python 3.11 on Linux; PY=$PY is not (set PY to a python3.11)"
# pip-compile resolves for the Python it runs on: its venv is made from PY, one per version.
TOOLS=${FSCHED_PIPTOOLS_VENV:-${TMPDIR:-/tmp}/fsched-piptools-$("$PY" -c 'import platform; print(platform.python_version())')}

# Only PyPI's files: a local index or wheel folder in pip's configuration would add hashes of
# files that no other machine has.
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_CONSTRAINT PIP_REQUIRE_VIRTUALENV
# The lock's header names the command to run, not pip-compile's long line.
export CUSTOM_COMPILE_COMMAND="make lock"

if ! "$TOOLS/bin/python" -m pip show -q "${PIPTOOLS%%==*}" 2>/dev/null ||
  [[ $("$TOOLS/bin/pip-compile" --version 2>/dev/null) != *"${PIPTOOLS##*==}"* ]]; then
  "$PY" -m venv --clear "$TOOLS"
  "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "$PIPTOOLS"
fi

# compile INPUT OUTPUT [pip-compile options]: OUTPUT's present pins are kept where INPUT still
# allows them (pip-compile prefers them), so a check run does not report PyPI's newer releases.
compile() {
  local input=$1 output=$2
  shift 2
  "$TOOLS/bin/pip-compile" "${COMPILE_OPTS[@]}" "$@" --output-file "$output" "$input"
}

# The pinned set of a lock: "name==version" lines, names normalised as PEP 503 says.
pins() {
  grep -E '^[A-Za-z0-9][A-Za-z0-9._-]*==' "$1" | sed -E 's/[[:space:]\\].*//' |
    awk -F'==' '{ n = tolower($1); gsub(/[-_.]+/, "-", n); print n "==" $2 }' | sort
}

# The agent's packages must be the [agent] extra of pyproject.toml, so that `pip install
# .[agent]` and `make agent` install the same thing (setuptools aside: it builds fsched).
agent_names_agree() {
  "$PY" - <<'EOF'
import re
import sys
import tomllib


def name(requirement):
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement.strip()).group()).lower()


with open("pyproject.toml", "rb") as f:
    extra = {name(r) for r in tomllib.load(f)["project"]["optional-dependencies"]["agent"]}
with open("requirements-agent.txt") as f:
    listed = {name(line) for line in f if line.strip() and not line.lstrip().startswith(("#", "-"))}
listed.discard("setuptools")
if extra != listed:
    print(
        f"lock.sh: requirements-agent.txt lists {sorted(listed)} but pyproject.toml's [agent] extra "
        f"is {sorted(extra)}",
        file=sys.stderr,
    )
    sys.exit(1)
EOF
}

# Every agent pin is a main pin at the same version.
agent_is_subset() {
  local extra
  extra=$(comm -23 <(pins "$1") <(pins "$2"))
  [[ -z $extra ]] || die "$1 pins what $2 does not: $extra"
}

agent_names_agree || exit 1

if [[ $mode == lock ]]; then
  compile requirements.txt requirements.lock
  compile requirements-agent.txt requirements-agent.lock --constraint requirements.lock
  agent_is_subset requirements-agent.lock requirements.lock
  compile requirements-tools.txt requirements-tools.lock
  echo "requirements.lock, requirements-agent.lock and requirements-tools.lock regenerated; commit them with their inputs"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stale=0
# The fresh lock is compiled beside the old one and under the same name as the constraint
# pip-compile reads, so only the inputs can make them differ.
cp requirements.lock "$work/requirements.lock"
cp requirements-agent.lock "$work/requirements-agent.lock"
cp requirements-tools.lock "$work/requirements-tools.lock"
compile requirements.txt "$work/requirements.lock"
compile requirements-agent.txt "$work/requirements-agent.lock" --constraint "$work/requirements.lock"
compile requirements-tools.txt "$work/requirements-tools.lock"
for lock in requirements.lock requirements-agent.lock requirements-tools.lock; do
  if ! diff -u --label "$lock (committed)" --label "$lock (from its input now)" \
    <(pins "$lock") <(pins "$work/$lock") >"$work/$lock.diff"; then
    echo "lock.sh: $lock is out of date with its input; run 'make lock' and commit it:" >&2
    cat "$work/$lock.diff" >&2
    stale=1
  fi
done
agent_is_subset requirements-agent.lock requirements.lock
((stale == 0)) || exit 1
echo "requirements.lock, requirements-agent.lock and requirements-tools.lock are up to date"
