"""``fsched sdiag``: the controller's scheduling statistics, printed as Slurm's sdiag.

    sdiag [-a|--all] [-r|--reset]

The lines are Slurm's, with their spacing, for every figure fsched measures.  Lines
Slurm prints for parts fsched does not have are left out rather than shown as a made-up
zero: Agent count and Agent thread count, the main scheduler's exit reasons and last
queue length, backfill's "since last slurm start" count and table sizes, and the RPC
tables.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from cli import clusters
from cli.client import ApiError, Client, CliError
from cli.fmt import make_parser

RESET_DENIED = "slurm_reset_statistics: Access/permission denied"


def _when(iso: str | None) -> tuple[str, int]:
    """Slurm's ``slurm_ctime2`` (local time) and the epoch seconds of an API timestamp."""
    if not iso:
        return "N/A", 0
    moment = datetime.fromisoformat(iso)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().strftime("%a %b %d %H:%M:%S %Y"), int(moment.timestamp())


def render(stats: dict) -> str:
    """sdiag's report of the API's statistics (docs/api.md)."""
    req_text, req = _when(stats["req_time"])
    since_text, since = _when(stats["req_time_start"])
    jobs = stats["jobs"]
    main = stats["schedule"]
    bf = stats["backfill"]
    out = [
        "*******************************************************",
        f"sdiag output at {req_text} ({req})",
        f"Data since      {since_text} ({since})",
        "*******************************************************",
        f"Server thread count:  {stats['server_thread_count']}",
        f"Agent queue size:     {stats['agent_queue_size']}",
        f"DBD Agent queue size: {stats['dbd_agent_queue_size']}",
        "",
        f"Jobs submitted: {jobs['submitted']}",
        f"Jobs started:   {jobs['started']}",
        f"Jobs completed: {jobs['completed']}",
        f"Jobs canceled:  {jobs['canceled']}",
        f"Jobs failed:    {jobs['failed']}",
        "",
    ]
    ts_text, ts = _when(stats["job_states_ts"])
    out += [
        f"Job states ts:  {ts_text} ({ts})",
        f"Jobs pending:   {stats['jobs_pending']}",
        f"Jobs running:   {stats['jobs_running']}",
        "",
        "Main schedule statistics (microseconds):",
        f"\tLast cycle:   {main['cycle_last']}",
        f"\tMax cycle:    {main['cycle_max']}",
        f"\tTotal cycles: {main['cycle_counter']}",
    ]
    cycles = main["cycle_counter"]
    if cycles > 0:
        out.append(f"\tMean cycle:   {main['cycle_sum'] // cycles}")
        out.append(f"\tMean depth cycle:  {main['cycle_depth'] // cycles}")
    # Whole minutes, as Slurm divides its time_t seconds.
    if req - since > 60:
        out.append(f"\tCycles per minute: {cycles // ((req - since) // 60)}")
    bf_cycles = bf["cycle_counter"]
    when_text, when = _when(bf["last_cycle_when"])
    out += [
        "",
        "Backfilling stats",
        f"\tTotal backfilled jobs (since last stats cycle start): {bf['backfilled_jobs']}",
        f"\tTotal backfilled heterogeneous job components: {bf['backfilled_het_jobs']}",
        f"\tTotal cycles: {bf_cycles}",
        f"\tLast cycle when: {when_text} ({when})" if when else "\tLast cycle when: N/A",
        f"\tLast cycle: {bf['cycle_last']}",
        f"\tMax cycle:  {bf['cycle_max']}",
    ]
    if bf_cycles > 0:
        out.append(f"\tMean cycle: {bf['cycle_sum'] // bf_cycles}")
    out.append(f"\tLast depth cycle: {bf['last_depth']}")
    out.append(f"\tLast depth cycle (try sched): {bf['last_depth_try']}")
    if bf_cycles > 0:
        out.append(f"\tDepth Mean: {bf['depth_sum'] // bf_cycles}")
        out.append(f"\tDepth Mean (try depth): {bf['depth_try_sum'] // bf_cycles}")
    out.append(f"\tLast queue length: {bf['queue_len']}")
    if bf_cycles > 0:
        out.append(f"\tQueue length mean: {bf['queue_len_sum'] // bf_cycles}")
    out += [
        "",
        f"Latency for 1000 calls to gettimeofday(): {stats['gettimeofday_latency']} microseconds",
    ]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    parser = make_parser("sdiag")
    parser.add_argument("-a", "--all", action="store_true", help="report the statistics (the default)")
    parser.add_argument("-r", "--reset", action="store_true", help="reset the statistics (administrators)")
    clusters.add_option(parser)
    args = parser.parse_args(argv)
    client = Client()
    if args.clusters:
        clusters.local_cluster(client, args.clusters, "sdiag")
    if args.reset:
        try:
            answer = client.post("/api/diag/reset/")
        except ApiError as exc:
            if exc.status == 403:
                sys.stderr.write(RESET_DENIED + "\n")
                return 1
            raise CliError(exc.message) from None
        sys.stdout.write(f"{answer['message']}\n")  # type: ignore[index]
        return 0
    try:
        stats = client.get("/api/diag/")
    except ApiError as exc:
        raise CliError(exc.message) from None
    sys.stdout.write(render(stats))  # type: ignore[arg-type]
    return 0
