#!/usr/bin/env bash
# The README's "Distributed mode" section, run literally on this machine: a fresh clone,
# PostgreSQL and Redis as Debian runs them (port 5432 and 6379), the controller's
# processes, an agent on a "compute host" (a network namespace on a bridge of its own),
# and a first job that must COMPLETE. Exit 0 only then. Run as root (CI: .ci/run).
#
# Which commands run: the ```sh blocks of that section tagged with an HTML comment
# `<!-- readme-test: ROLE [MODE] -->` (scripts/lib/readme.sh), in order, each in a new
# bash (set -euo pipefail), so a step that works only thanks to an earlier step's shell
# variables fails here as it would in a newcomer's new terminal.
#   ROLE controller: on this machine, as root.
#   ROLE node:       inside the namespace, as root; /etc/fsched there is its own
#                    directory (ip netns exec binds /etc/netns/NS/fsched over it), as on
#                    another host. The README's scp/ssh lines (untagged: no ssh here) are
#                    done by this script with cp, before the first node background block.
#   ROLE user:       as the README's user, from their home directory.
#   MODE background: a long-running process a newcomer starts in a terminal of its own:
#                    started in its own process group, stopped at exit.
#   MODE check:      what the README says to wait for: retried until it succeeds (2 min).
#   MODE install:    (node) package installs, run in the compute host's clone but outside
#                    the namespace, which has no way to a package index (a real compute
#                    host reaches its mirror).
# Three words of the README name the reader's site, and are replaced in the blocks:
#   /opt/fsched -> this script's clone (a second clone for the compute host),
#   10.0.0.1    -> the controller's address on the script's bridge,
#   alice       -> a Unix user the script creates (the README's "your own login").
#
# It refuses to run where it could clobber a real installation (/etc/fsched, the fsched
# user, a running Redis on 6379, the address range in use), and undoes at exit what it
# and the README created: processes, namespace and bridge, users, /etc/fsched,
# /var/lib/fsched*, the database and role, Redis's config; PostgreSQL and Redis are
# stopped again if they were stopped. It does not touch other PostgreSQL or Redis
# servers (.ci/run's on 55432 and 56379).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib/readme.sh
. "$here/scripts/lib/readme.sh"

SUBNET_PREFIX=10.231.78
CTL_ADDR=$SUBNET_PREFIX.1
NODE_ADDR=$SUBNET_PREFIX.2
NS=fschedrt-node01
BRIDGE=fschedrt0
VETH_HOST=fschedrt-h
VETH_NODE=fschedrt-n
TEST_USER=fschedrt
CHECK_SECONDS=120
STEP_SECONDS=600
JOB_SECONDS=180

say() { printf 'readme-distributed: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}

[[ $(id -u) -eq 0 ]] || die "run as root: the README's steps are root's (useradd, /etc, services)"
for path in /etc/fsched /var/lib/fsched /var/lib/fsched-agent "/etc/netns/$NS"; do
  [[ ! -e $path ]] || die "$path exists: this machine has an fsched installation; not touching it"
done
for user in fsched "$TEST_USER"; do
  ! id "$user" >/dev/null 2>&1 || die "user $user exists; not touching it"
done
if ip -4 -o addr show | grep -q " $SUBNET_PREFIX\." || [[ -n $(ip -4 route show "$SUBNET_PREFIX.0/24") ]]; then
  die "$SUBNET_PREFIX.0/24 is in use on this machine"
fi
! ip link show "$BRIDGE" >/dev/null 2>&1 || die "link $BRIDGE exists"
! ip netns list | grep -qw "$NS" || die "network namespace $NS exists"
if redis-cli -p 6379 ping >/dev/null 2>&1; then
  die "a Redis already answers on 6379; the README's step would restart it with a password"
fi

work=$(mktemp -d /tmp/fsched-readme.XXXXXX)
# The clones are read by the fsched and test users, as /opt/fsched would be.
chmod 755 "$work"
pids=()
redis_conf=/etc/redis/redis.conf
redis_dump=/var/lib/redis/dump.rdb
pg_was_up=0
redis_was_up=0
redis_dump_existed=0
[[ -e $redis_dump ]] && redis_dump_existed=1
[[ -e $redis_conf ]] && cp -p "$redis_conf" "$work/redis.conf.orig"

cleanup() {
  local status=$?
  set +e
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.2
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null; done
  if ((status != 0)); then
    for log in "$work"/logs/*.log; do
      [[ -e $log ]] || continue
      say "---- $(basename "$log") (last lines)"
      tail -n 25 "$log" >&2
    done
  fi
  if [[ -d /var/lib/postgresql ]] && runuser -u postgres -- psql -Atqc 'select 1' >/dev/null 2>&1; then
    runuser -u postgres -- psql -q -c 'DROP DATABASE IF EXISTS fsched' -c 'DROP ROLE IF EXISTS fsched' >/dev/null
    ((pg_was_up)) || service postgresql stop >/dev/null
  fi
  if [[ -e $work/redis.conf.orig ]]; then
    cp -p "$work/redis.conf.orig" "$redis_conf"
    if ((redis_was_up)); then service redis-server restart >/dev/null; else service redis-server stop >/dev/null; fi
    ((redis_dump_existed)) || rm -f "$redis_dump"
  fi
  # Jobs outlive their agent by design: whatever still runs in the namespace is ours.
  for pid in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  ip netns del "$NS" 2>/dev/null
  ip link del "$BRIDGE" 2>/dev/null
  rm -rf /etc/fsched /var/lib/fsched /var/lib/fsched-agent "/etc/netns/$NS"
  rmdir /etc/netns 2>/dev/null
  id fsched >/dev/null 2>&1 && userdel fsched
  id "$TEST_USER" >/dev/null 2>&1 && userdel -r "$TEST_USER" 2>/dev/null
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

service postgresql status >/dev/null 2>&1 && pg_was_up=1
service redis-server status >/dev/null 2>&1 && redis_was_up=1
if ((pg_was_up)); then
  [[ -z $(runuser -u postgres -- psql -Atqc "select 1 from pg_roles where rolname = 'fsched'") ]] ||
    die "PostgreSQL already has a role fsched; not touching it"
fi

say "cloning $here"
git clone -q "$here" "$work/controller"
git clone -q "$here" "$work/node"
mkdir -p "$work/blocks" "$work/logs"
count=$(readme_blocks "$work/controller/README.md" "Distributed mode" "$work/blocks")
((count > 0)) || die "no readme-test blocks in the README's Distributed mode section"

# The compute host: its own network namespace and address, reachable only from the
# bridge's address; no default route, so it reaches nothing else.
ip link add "$BRIDGE" type bridge
ip addr add "$CTL_ADDR/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
ip netns add "$NS"
ip link add "$VETH_HOST" type veth peer name "$VETH_NODE"
ip link set "$VETH_HOST" master "$BRIDGE" up
ip link set "$VETH_NODE" netns "$NS"
ip -n "$NS" addr add "$NODE_ADDR/24" dev "$VETH_NODE"
ip -n "$NS" link set "$VETH_NODE" up
ip -n "$NS" link set lo up
mkdir -p "/etc/netns/$NS/fsched"

useradd -m -s /bin/bash "$TEST_USER"

site() { # the block's text with the README's site words replaced (header comment)
  local clone=$1 file=$2
  sed -e "s#/opt/fsched#$clone#g" -e "s#10\.0\.0\.1#$CTL_ADDR#g" -e "s#\balice\b#$TEST_USER#g" "$file"
}

copied=0
copy_to_node() { # what the README's scp/ssh lines do
  install -m 0644 /etc/fsched/slurm.conf "/etc/netns/$NS/fsched/slurm.conf"
  cat /etc/fsched/agent_key >"/etc/netns/$NS/fsched/agent_key"
  copied=1
}

run_block() { # NN ROLE MODE
  local n=$1 role=$2 mode=$3 script log clone=$work/controller
  [[ $role == node ]] && clone=$work/node
  script=$(site "$clone" "$work/blocks/$n.sh")
  log=$work/logs/$n-$role${mode:+-$mode}.log
  local -a cmd
  case $role in
    controller) cmd=(bash -euo pipefail -c "$script") ;;
    node)
      cmd=(ip netns exec "$NS" bash -euo pipefail -c "$script")
      [[ $mode == install ]] && cmd=(bash -euo pipefail -c "$script")
      ;;
    user) cmd=(runuser -u "$TEST_USER" -- bash -euo pipefail -c "$script") ;;
    *) die "block $n: unknown role $role" ;;
  esac
  say "block $n ($role${mode:+ $mode}): $(grep -v '^cd ' <<<"$script" | head -n 1)"
  case $mode in
    background)
      setsid "${cmd[@]}" >"$log" 2>&1 </dev/null &
      pids+=("$!")
      ;;
    check)
      local deadline=$((SECONDS + CHECK_SECONDS))
      until timeout 60 "${cmd[@]}" >"$log" 2>&1 </dev/null; do
        ((SECONDS < deadline)) || die "block $n: still failing after ${CHECK_SECONDS}s"
        sleep 2
      done
      ;;
    "" | install)
      local limit=$STEP_SECONDS
      # The first job waits for the agent: a node that never registers must not hang CI.
      [[ $role == user ]] && limit=$JOB_SECONDS
      timeout "$limit" "${cmd[@]}" >"$log" 2>&1 </dev/null || die "block $n failed"
      ;;
    *) die "block $n: unknown mode $mode" ;;
  esac
}

for tagfile in "$work"/blocks/*.tag; do
  n=$(basename "$tagfile" .tag)
  read -r role mode <"$tagfile" || true
  if [[ $role == node && $mode == background ]] && ((!copied)); then
    copy_to_node
  fi
  run_block "$n" "$role" "${mode:-}"
done

last=$(ls "$work"/logs/*-user.log | tail -n 1)
cat "$last"
grep -q 'JobState=COMPLETED' "$last" || die "the first job did not complete"
say "the README's cluster ran a job: OK"
