"""``fsched simulate gen``: a synthetic workload of a given size and mix, as a job list.

    python -m simulator gen --jobs 1000 --seed 7 --out jobs.yaml \\
        --users 12 --accounts physics,chemistry --partitions batch:3,long:1 \\
        --sizes 1:60,2:25,4:10,8:5 --arrival-rate 120 --run-time lognormal:900:1.2 \\
        --hres-share 0.2 --limit-share 0.1

Arrivals are a Poisson process (``--arrival-rate`` jobs per hour); each job draws its
user (and with it the account: user i always charges the same account, so one accounts
file serves every seed), partition, QOS, node count, tasks per node, memory and run time
from the mix.  Its time limit over-estimates the run time as users do (1.1 to 4 times,
in whole minutes), except for the ``--limit-share`` of jobs, which run past it and end in
TIMEOUT.  The ``--hres-share`` of jobs ask for one of the ``--hres`` license requests.
One ``random.Random(seed)`` draws everything in a fixed order: the same arguments write
the same file.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from simulator.records import SimJob
from simulator.workloads.joblist import write_job_list
from slurmwords.durations import parse_duration_seconds
from slurmwords.memory import parse_memory_mb

# What resources.yaml of examples/simulate/conf/ offers (power is its Mode 3 resource).
DEFAULT_HRES = "power:full_node,natural:4,flat:2"
DISTRIBUTIONS = ("lognormal", "exponential", "uniform", "fixed")


class MixError(ValueError):
    pass


def _weighted(text: str, option: str, convert=str) -> list[tuple[object, float]]:
    """``a:3,b:1`` -> [(a, 3.0), (b, 1.0)]; a value without ``:weight`` weighs 1."""
    out = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        value, _, weight = item.rpartition(":") if ":" in item else (item, "", "1")
        try:
            w = float(weight)
            converted = convert(value)
        except ValueError as exc:
            raise MixError(f"{option}: {item!r}: {exc}") from None
        if not math.isfinite(w) or w < 0:
            raise MixError(f"{option}: {item!r}: the weight must be a number, 0 or more")
        out.append((converted, w))
    if not out or not sum(w for _, w in out):
        raise MixError(f"{option}: {text!r} names nothing to choose")
    return out


def _positive(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError("not a whole number of 1 or more")
    return int(text)


def _memory(text: str) -> int:
    return parse_memory_mb(text)


def _seconds(text: str) -> float:
    text = text.strip()
    if text.replace(".", "", 1).isdigit():
        return float(text)
    seconds = parse_duration_seconds(text)
    if seconds is None:
        raise ValueError("a run time cannot be unlimited")
    return float(seconds)


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share from 0 to 1") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share from 0 to 1")
    return value


def _count_arg(text: str) -> int:
    try:
        return _positive(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more") from None


class RunTime:
    """``lognormal:MEDIAN:SIGMA``, ``exponential:MEAN``, ``uniform:MIN:MAX``, ``fixed:S``
    (times in seconds or Slurm's duration text)."""

    def __init__(self, text: str) -> None:
        head = text.partition(":")[0]
        kind, *params = text.split(":") if head in DISTRIBUTIONS else ("", text)
        wanted = {"lognormal": 2, "exponential": 1, "uniform": 2, "fixed": 1}.get(kind)
        if wanted is None:
            raise MixError(f"--run-time: {text!r}: give one of {', '.join(DISTRIBUTIONS)} and its numbers")
        # Slurm's duration text has ':' too (1:00:00): the times are the first fields,
        # lognormal's sigma the last one.
        if kind == "lognormal":
            times, rest = [":".join(params[:-1])], params[-1:]
        elif kind == "uniform" and len(params) != 2:
            raise MixError(f"--run-time: {text!r}: uniform takes MIN:MAX in seconds")
        else:
            times, rest = ([":".join(params)] if kind != "uniform" else params), []
        try:
            self.times = [_seconds(t) for t in times]
            self.sigma = float(rest[0]) if rest else 0.0
        except (ValueError, IndexError) as exc:
            raise MixError(f"--run-time: {text!r}: {exc}") from None
        if len(self.times) + len(rest) != wanted or any(t <= 0 for t in self.times) or self.sigma < 0:
            raise MixError(f"--run-time: {text!r}: the times must be more than 0 (and sigma 0 or more)")
        if kind == "uniform" and self.times[0] > self.times[1]:
            raise MixError(f"--run-time: {text!r}: MIN is more than MAX")
        self.kind = kind

    def draw(self, rng: random.Random) -> float:
        if self.kind == "lognormal":
            return rng.lognormvariate(math.log(self.times[0]), self.sigma)
        if self.kind == "exponential":
            return rng.expovariate(1 / self.times[0])
        if self.kind == "uniform":
            return rng.uniform(self.times[0], self.times[1])
        return self.times[0]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fsched simulate gen",
        description="Write a synthetic workload (a YAML or JSON job list; .json writes JSON).",
    )
    p.add_argument("--jobs", type=_count_arg, required=True, help="how many jobs")
    p.add_argument("--seed", type=int, default=0, help="the same seed writes the same workload (default 0)")
    p.add_argument("--out", required=True, help="the file to write (.json: JSON, else YAML)")
    p.add_argument("--users", default="8", help="N (user1..userN) or a comma list of names (default 8)")
    p.add_argument(
        "--accounts", default="physics,chemistry,biology", help="comma list; user i charges the i-th"
    )
    p.add_argument("--partitions", default="", help="name:weight,... (default: the default partition)")
    p.add_argument("--qos", default="", help="name:weight,... (default: the association's)")
    p.add_argument(
        "--sizes", default="1:60,2:25,4:10,8:5", help="nodes:weight,... (default 1:60,2:25,4:10,8:5)"
    )
    p.add_argument(
        "--tasks-per-node", default="1:40,2:30,4:30", help="tasks:weight,... (default 1:40,2:30,4:30)"
    )
    p.add_argument(
        "--mem", default="", help="per-node size:weight,... e.g. 500M:3,1G:1 (default: none asked)"
    )
    p.add_argument("--arrival-rate", type=float, default=60.0, help="jobs per hour, Poisson (default 60)")
    p.add_argument(
        "--run-time",
        default="lognormal:600:1.0",
        help="lognormal:MEDIAN:SIGMA | exponential:MEAN | uniform:MIN:MAX | fixed:S "
        "(default lognormal:600:1.0)",
    )
    p.add_argument("--hres-share", type=_share, default=0.2, help="share of jobs with an HRES request (0.2)")
    p.add_argument(
        "--hres", default=DEFAULT_HRES, help=f"license requests to draw from, comma list ({DEFAULT_HRES})"
    )
    p.add_argument(
        "--limit-share", type=_share, default=0.05, help="share of jobs that run past their limit (0.05)"
    )
    p.add_argument("--fail-share", type=_share, default=0.02, help="share of jobs that exit 1 (0.02)")
    p.add_argument(
        "--dependency-share",
        type=_share,
        default=0.0,
        help="share of jobs with afterok on an earlier job (0)",
    )
    return p


class Mix:
    """The parsed options: what one job is drawn from."""

    def __init__(self, opts: argparse.Namespace) -> None:
        users = opts.users.strip()
        if users.isascii() and users.isdigit():
            if int(users) < 1:
                raise MixError("--users: 1 or more")
            self.users = [f"user{i}" for i in range(1, int(users) + 1)]
        else:
            self.users = [u.strip() for u in users.split(",") if u.strip()]
        self.accounts = [a.strip() for a in opts.accounts.split(",") if a.strip()]
        if not self.users:
            raise MixError("--users: name at least one user")
        self.partitions = _weighted(opts.partitions, "--partitions") if opts.partitions else [("", 1.0)]
        self.qos = _weighted(opts.qos, "--qos") if opts.qos else [("", 1.0)]
        self.sizes = _weighted(opts.sizes, "--sizes", _positive)
        self.tasks = _weighted(opts.tasks_per_node, "--tasks-per-node", _positive)
        self.mem = _weighted(opts.mem, "--mem", _memory) if opts.mem else [(0, 1.0)]
        self.hres = [h.strip() for h in opts.hres.split(",") if h.strip()]
        if opts.hres_share and not self.hres:
            raise MixError("--hres: name at least one request, or give --hres-share 0")
        if not (math.isfinite(opts.arrival_rate) and opts.arrival_rate > 0):
            raise MixError("--arrival-rate: a number of jobs per hour, more than 0")
        self.rate = opts.arrival_rate / 3600
        self.run_time = RunTime(opts.run_time)
        self.opts = opts


def _pick(rng: random.Random, choices: list[tuple[object, float]]):
    values, weights = zip(*choices, strict=True)
    return rng.choices(values, weights)[0]


def generate(mix: Mix, jobs: int, seed: int) -> list[SimJob]:
    rng = random.Random(seed)
    opts = mix.opts
    out: list[SimJob] = []
    clock = 0.0
    for job_id in range(1, jobs + 1):
        if job_id > 1:
            clock += rng.expovariate(mix.rate)
        u = rng.randrange(len(mix.users))
        nodes = _pick(rng, mix.sizes)
        run = max(1.0, round(mix.run_time.draw(rng)))
        over_limit = rng.random() < opts.limit_share
        if over_limit:
            # The limit is below the time the job would need: it is stopped (TIMEOUT).
            limit = max(1, math.floor(run / 60 / rng.uniform(1.2, 3.0)))
            run = max(run, limit * 60 + 60)
        else:
            limit = math.ceil(run * rng.uniform(1.1, 4.0) / 60)
        hres = rng.random() < opts.hres_share
        failed = rng.random() < opts.fail_share
        depends = rng.random() < opts.dependency_share and job_id > 1
        out.append(
            SimJob(
                job_id=job_id,
                submit=round(clock, 3),
                run_time=run,
                user=mix.users[u],
                account=mix.accounts[u % len(mix.accounts)] if mix.accounts else "",
                partition=_pick(rng, mix.partitions),
                qos=_pick(rng, mix.qos),
                nodes=nodes,
                ntasks=nodes * _pick(rng, mix.tasks),
                mem_mb=_pick(rng, mix.mem),
                time_limit=limit,
                licenses=rng.choice(mix.hres) if hres else "",
                name="gen",
                dependency=f"afterok:{rng.randrange(1, job_id)}" if depends else "",
                exit_code=1 if failed else 0,
            )
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    opts = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        mix = Mix(opts)
    except MixError as exc:
        p.error(str(exc))
    out = Path(opts.out)
    try:
        write_job_list(generate(mix, opts.jobs, opts.seed), out)
    except OSError as exc:
        sys.stderr.write(f"{p.prog}: error: cannot write {out}: {exc.strerror or exc}\n")
        return 1
    sys.stdout.write(f"{opts.jobs} jobs written to {out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
