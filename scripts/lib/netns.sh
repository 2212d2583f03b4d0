# Helpers of scripts/netns-cluster.sh: messages, waiting, reading the cluster through the
# CLI, and the cleanup that removes everything the script created. Sourced, not run.

cannot() {
  echo "netns-cluster: cannot run: $*" >&2
  exit 2
}

fail() {
  echo "netns-cluster: FAILED: $*" >&2
  exit 1
}

# wait_until SECONDS WHAT COMMAND...: run COMMAND until it succeeds; fail after SECONDS.
wait_until() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${seconds} s waiting for $what"
    sleep 0.3
  done
}

controller_answers() {
  kill -0 "$SERVER_PID" 2>/dev/null || fail "the controller exited (see $WORK/server.log)"
  "$FSCHED" sinfo -h
}

# api_nodes HOSTLIST: the controller's node objects of HOSTLIST as JSON, through the CLI's
# client and login (sinfo --json prints Slurm's shape, without fsched's agent ids).
api_nodes() {
  "$PY" -c '
import json, sys
from cli.client import Client
print(json.dumps(Client().get_all("/api/nodes/", {"name": sys.argv[1]})))' "$1"
}

# nodes_idle HOSTLIST: every node of HOSTLIST is IDLE.
nodes_idle() {
  api_nodes "$1" | "$PY" -c '
import json, sys
nodes = json.load(sys.stdin)
sys.exit(0 if nodes and all(n["state"] == "IDLE" for n in nodes) else 1)'
}

# job_field JOB FIELD: one field of `fsched scontrol show job JOB`.
job_field() {
  "$FSCHED" scontrol show job "$1" | grep -oE "(^| )$2=[^ ]*" | head -n 1 | sed "s/^ *$2=//"
}

# jobs_completed JOB...: every job COMPLETED; one that ended otherwise fails the run.
jobs_completed() {
  local job state
  for job in "$@"; do
    state=$(job_field "$job" JobState)
    case $state in
      COMPLETED) ;;
      FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
        fail "job $job ended $state: $("$FSCHED" scontrol show job "$job")" ;;
      *) return 1 ;;
    esac
  done
}

# Stop what the script started (by pid), then remove the namespaces, the bridge and the
# temporary directory; the exit status is kept. On failure the logs' tails are shown.
cleanup() {
  local status=$? pid ns i
  trap - EXIT INT TERM
  set +e
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for i in $(seq 1 50); do
    local alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.2
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  for ns in "${CREATED_NS[@]}"; do
    # Jobs outlive their agent by design: whatever still runs in our namespace is ours.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$ns"
  done
  for i in "${!CREATED_NS[@]}"; do ip link del "${BRIDGE}h$i" 2>/dev/null; done
  ((BRIDGE_MADE)) && ip link del "$BRIDGE"
  if ((status != 0)) && [[ -d ${WORK:-} ]]; then
    local log
    for log in "$WORK"/*.log; do
      [[ -f $log ]] || continue
      echo "--- last lines of $log" >&2
      tail -n 15 "$log" >&2
    done
  fi
  if [[ -d ${WORK:-} ]]; then
    if [[ ${FSCHED_NETNS_KEEP:-0} == 1 ]]; then
      echo "netns-cluster: kept $WORK" >&2
    else
      rm -rf "$WORK"
    fi
  fi
  exit "$status"
}
