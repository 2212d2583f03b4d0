#!/usr/bin/env bash
# Two agents in their own network namespaces, reaching the controller by a non-loopback
# address, as compute hosts would: the multi-host deployment on one machine.
#
# As root. Creates a bridge fsbr<pid> with 10.231.77.1/24 in the root namespace and two
# namespaces, fsched-n1 (10.231.77.11) and fsched-n2 (10.231.77.12), each with a veth on
# the bridge, loopback up and no default route (nothing in them can reach further).
# Starts the controller bound to 10.231.77.1, one agent in each namespace
# (n1: node[01-16], n2: node[17-32] of examples/demo), submits jobs with `fsched sbatch`
# from the root namespace to partitions whose nodes are split across the two agents,
# waits until they are COMPLETED and checks that each agent's nodes ran jobs from inside
# its namespace and that the server saw each agent connect from its namespace's address.
#
# Distributed mode when FSCHED_DATABASE_URL and FSCHED_REDIS_URL are set (server
# --no-cycles, one Celery worker and ONE beat); the database is migrated and FLUSHED, as
# the e2e harness does: give it a scratch database. Embedded (SQLite in a temporary
# state directory) otherwise.
#
# Everything it creates is removed on exit, failed or not (FSCHED_NETNS_KEEP=1 keeps the
# temporary directory and its logs). Exit status 0: every check passed; 1: a check
# failed; 2: cannot run here (not root, no `ip netns`, the subnet already in use).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib/netns.sh
source "$ROOT/scripts/lib/netns.sh"

SUBNET=10.231.77
CONTROLLER_IP=$SUBNET.1
BRIDGE=fsbr$$
NAMESPACES=(fsched-n1 fsched-n2)
AGENT_IPS=("$SUBNET.11" "$SUBNET.12")
AGENT_NODES=("node[01-16]" "node[17-32]")
VENV=${FSCHED_VENV:-$ROOT/.venv}
PY=$VENV/bin/python
FSCHED=$VENV/bin/fsched

[[ $(id -u) -eq 0 ]] || cannot "must run as root (it creates network namespaces and a bridge)"
ip netns list >/dev/null 2>&1 || cannot "'ip netns' is not available here"
[[ -x $FSCHED ]] || cannot "no $FSCHED: make the virtualenv first (make install)"
if ip -4 addr | grep -q "inet $SUBNET\." || ip route | grep -q "^$SUBNET\."; then
  cannot "$SUBNET.0/24 is already in use on this machine (ip -4 addr / ip route): refusing"
fi
for ns in "${NAMESPACES[@]}"; do
  ip netns list | grep -qw "^$ns" && cannot "network namespace $ns already exists: another run? (ip netns del $ns)"
done

WORK=$(mktemp -d /tmp/fsched-netns.XXXXXX)
chmod 755 "$WORK"
PIDS=()
CREATED_NS=()
BRIDGE_MADE=0
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- the network -----------------------------------------------------------------------
ip link add "$BRIDGE" type bridge
BRIDGE_MADE=1
ip addr add "$CONTROLLER_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
for i in "${!NAMESPACES[@]}"; do
  ns=${NAMESPACES[$i]}
  ip netns add "$ns"
  CREATED_NS+=("$ns")
  # Host side named after the bridge, so a leftover is recognisable (15 characters at most).
  host_end="${BRIDGE}h$i"
  ip link add "$host_end" type veth peer name eth0 netns "$ns"
  ip link set "$host_end" master "$BRIDGE" up
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip addr add "${AGENT_IPS[$i]}/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  if ip netns exec "$ns" ip route | grep -q '^default'; then
    fail "$ns has a default route"
  fi
done

# --- the controller --------------------------------------------------------------------
PORT=$("$PY" -c "import socket; s = socket.socket(); s.bind(('$CONTROLLER_IP', 0)); print(s.getsockname()[1])")
URL=http://$CONTROLLER_IP:$PORT
export FSCHED_STATE_DIR=$WORK/state
export FSCHED_CONF_DIR=$ROOT/examples/demo
export FSCHED_HOST=$CONTROLLER_IP
export FSCHED_PORT=$PORT
export FSCHED_URL=$URL
export FSCHED_ALLOWED_HOSTS=$CONTROLLER_IP,127.0.0.1,localhost
export FSCHED_CLI_CONFIG=$WORK/cli.json
export FSCHED_SCHED_INTERVAL=1
export FSCHED_HEALTH_INTERVAL=1
# The agents read the key from a file (never the environment they pass on).
unset FSCHED_AGENT_KEY FSCHED_TOKEN
mkdir -m 0700 "$FSCHED_STATE_DIR"
DISTRIBUTED=0
if [[ -n ${FSCHED_DATABASE_URL:-} && -n ${FSCHED_REDIS_URL:-} ]]; then
  DISTRIBUTED=1
else
  export FSCHED_DATABASE_URL="" FSCHED_REDIS_URL=""
fi
cd "$ROOT"
# What `make run` does (config/demo.py, Cluster.setup): migrate, then the administrator and
# a CLI token (fsched_bootstrap), here for the controller's bridge address.
"$PY" manage.py migrate --no-input -v 0
((DISTRIBUTED)) && "$PY" manage.py flush --no-input
"$PY" manage.py fsched_bootstrap --url "$URL" >"$WORK/bootstrap.log"
KEY_FILE=$FSCHED_STATE_DIR/agent_key # created by fsched_bootstrap (cluster.core.state_files.create_keys)
[[ -s $KEY_FILE ]] || fail "no cluster key in $KEY_FILE"

if ((DISTRIBUTED)); then
  "$FSCHED" server --no-cycles --workers 2 --log-level info >"$WORK/server.log" 2>&1 &
  PIDS+=($!)
  "$VENV/bin/celery" -A config worker -l warning -c 2 -P threads >"$WORK/worker.log" 2>&1 &
  PIDS+=($!)
  "$VENV/bin/celery" -A config beat -l warning >"$WORK/beat.log" 2>&1 &
  PIDS+=($!)
else
  "$FSCHED" server --log-level info >"$WORK/server.log" 2>&1 &
  PIDS+=($!)
fi
SERVER_PID=${PIDS[0]}
wait_until 30 "the controller answers on $URL" controller_answers
grep -m1 'fsched server: listening on' "$WORK/server.log" | sed 's/^/  /'

# --- the agents, one per namespace -----------------------------------------------------
AGENT_PIDS=()
for i in "${!NAMESPACES[@]}"; do
  ip netns exec "${NAMESPACES[$i]}" "$FSCHED" agent --nodes "${AGENT_NODES[$i]}" \
    --controller "ws://$CONTROLLER_IP:$PORT" --key-file "$KEY_FILE" \
    --spool "$WORK/spool-n$((i + 1))" >"$WORK/agent-n$((i + 1)).log" 2>&1 &
  PIDS+=($!)
  AGENT_PIDS+=($!)
done
wait_until 60 "node[01-32] IDLE" nodes_idle 'node[01-32]'

# --- jobs in partitions split across the agents (batch: node[09-24]) --------------------
JOBDIR=$WORK/jobs
mkdir "$JOBDIR"
cd "$JOBDIR"
WHERE="ip -4 -o addr show dev eth0"
JOBS=()
for spec in "-p batch -w node10" "-p batch -w node20" "-p batch -N 16" "-p debug -w node03" "-p long -w node30"; do
  # shellcheck disable=SC2086 # $spec is words on purpose
  out=$("$FSCHED" sbatch $spec --wrap "$WHERE") || fail "fsched sbatch $spec failed"
  [[ $out =~ ^Submitted\ batch\ job\ ([0-9]+)$ ]] || fail "fsched sbatch $spec: unexpected output: $out"
  JOBS+=("${BASH_REMATCH[1]}")
done
echo "  submitted jobs ${JOBS[*]} to $URL"
wait_until 60 "jobs ${JOBS[*]} COMPLETED" jobs_completed "${JOBS[@]}"

# --- where they ran --------------------------------------------------------------------
# Each agent's nodes: the API's node record names the agent (host:spool id) that
# registered it, and each agent's spool keeps its id in agent_id.
declare -A AGENT_OF_SPOOL
for i in "${!AGENT_PIDS[@]}"; do
  AGENT_OF_SPOOL[$(cat "$WORK/spool-n$((i + 1))/agent_id")]=$i
done
check_job() { # job id, expected namespace index
  local job=$1 want=$2 host node_agent spool_id
  host=$(job_field "$job" BatchHost)
  node_agent=$(api_nodes "$host" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["agent"])')
  spool_id=${node_agent##*:}
  [[ ${AGENT_OF_SPOOL[$spool_id]:-} == "$want" ]] ||
    fail "job $job ran on $host, registered by agent $node_agent, not the agent of ${NAMESPACES[$want]}"
  grep -q "inet ${AGENT_IPS[$want]}/" "$JOBDIR/slurm-$job.out" ||
    fail "job $job's output does not show ${NAMESPACES[$want]}'s address: $(cat "$JOBDIR/slurm-$job.out")"
  echo "  job $job: COMPLETED on $host, agent $node_agent in ${NAMESPACES[$want]} (${AGENT_IPS[$want]})"
}
check_job "${JOBS[0]}" 0
check_job "${JOBS[1]}" 1
check_job "${JOBS[2]}" 0 # node[09-24]: the batch step on node09
[[ $(job_field "${JOBS[2]}" NodeList) == "node[09-24]" ]] ||
  fail "job ${JOBS[2]} did not span both agents: NodeList=$(job_field "${JOBS[2]}" NodeList)"
check_job "${JOBS[3]}" 0
check_job "${JOBS[4]}" 1
"$FSCHED" scontrol show node node20 | grep -q "State=IDLE" || fail "node20 is not IDLE after its job"

# The peer address of each agent's websocket: uvicorn's own line, at --log-level info
# (nothing in the node's record keeps it).
for i in "${!NAMESPACES[@]}"; do
  grep -qE "${AGENT_IPS[$i]//./\\.}:[0-9]+ - \"WebSocket /ws/agent/\" \[accepted\]" "$WORK/server.log" ||
    fail "the server's log shows no agent connection from ${AGENT_IPS[$i]}"
  echo "  the server accepted ${NAMESPACES[$i]}'s agent from ${AGENT_IPS[$i]}"
done
mode=embedded
((DISTRIBUTED)) && mode=distributed
echo "netns-cluster: OK ($mode): ${#JOBS[@]} jobs COMPLETED on both agents across namespaces"
