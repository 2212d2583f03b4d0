"""``fsched sprio``: the pending jobs' priority factors, printed as Slurm's sprio.

    sprio [-h] [-j[jobs]] [-l] [-n] [-o format] [-p partitions] [-S sort] [-u users] [-w]

The factors are the scheduler's own (the multifactor priority of the controller's next
pass), each multiplied by its PriorityWeight* (``-n``: the factor alone, 0 to 1).
Format letters are sprio's: ``%i`` JOBID, ``%r`` PARTITION, ``%u`` USER, ``%Y``/``%y``
PRIORITY, ``%S`` SITE, ``%A``/``%a`` AGE, ``%B``/``%b`` ASSOC, ``%F``/``%f`` FAIRSHARE,
``%J``/``%j`` JOBSIZE, ``%P``/``%p`` PARTITION, ``%Q``/``%q`` QOS, ``%N`` NICE,
``%T``/``%t`` TRES (upper case weighted, lower case normalized).
"""

from __future__ import annotations

import sys
from functools import cmp_to_key

from cli import clusters
from cli.client import ApiError, Client, CliError
from cli.fmt import Field, make_parser, pad, parse_format

NOT_MULTIFACTOR = (
    "You are not running a supported priority plugin\n({}).\nOnly 'priority/multifactor' is supported.\n"
)
NO_MATCH = "Unable to find jobs matching user/id(s) specified\n"
# sprio's default formats, as it builds them: the weighted factors whose weight is set.
LONG = "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T"
LONG_NORM = "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t"
_OPTIONAL = (("age", "A"), ("assoc", "B"), ("fairshare", "F"), ("jobsize", "J"), ("partition", "P"),
             ("qos", "Q"), ("tres", "T"))  # fmt: skip
HEADERS = {
    "i": "JOBID",
    "r": "PARTITION",
    "u": "USER",
    "y": "PRIORITY",
    "s": "SITE",
    "a": "AGE",
    "b": "ASSOC",
    "f": "FAIRSHARE",
    "j": "JOBSIZE",
    "p": "PARTITION",
    "q": "QOS",
    "n": "NICE",
    "t": "TRES",
}
# Letter -> the job's weighted value of that factor, and the weight it divides by for -n.
_FACTOR = {"a": "age", "b": "assoc", "f": "fairshare", "j": "jobsize", "p": "partition_factor", "q": "qos"}
_WEIGHT = {"a": "age", "b": "assoc", "f": "fairshare", "j": "jobsize", "p": "partition", "q": "qos"}
WEIGHTS_ROW = -1  # sprio -w prints one row, of the weights, in place of the jobs


def default_format(weights: dict, *, long: bool, norm: bool, users: bool) -> str:
    if long:
        return LONG_NORM if norm else LONG
    spec = "%.15i %9r"
    if users:
        spec += " %.8u"
    spec += " %10y" if norm else " %.10Y %.10S"
    for name, letter in _OPTIONAL:
        if weights.get(name):
            if name == "tres":
                spec += " %20t" if norm else " %.20T"
            else:
                spec += f" %10{letter.lower()}" if norm else f" %.10{letter}"
    return spec


def _weight(weights: dict, letter: str) -> float:
    return weights.get(_WEIGHT[letter], 0) or 0


def _tres(job: dict, weights: dict, *, norm: bool) -> str:
    if not norm:
        return ",".join(f"{name}={value:.0f}" for name, value in job["tres"].items() if value)
    per = {}
    for item in filter(None, str(weights.get("tres") or "").split(",")):
        name, _, value = item.partition("=")
        per[name] = float(value or 0)
    return ",".join(
        f"{name}={value / per[name]:.2f}" for name, value in job["tres"].items() if value and per.get(name)
    )


def cell(field: Field, job: dict | int | None, weights: dict) -> str:
    """One field of the header (``job`` None), of the weights row, or of a job."""
    kind = field.kind
    letter = kind.lower()
    if letter not in HEADERS or kind in ("I", "R", "U", "s", "n"):
        raise CliError(f"Invalid job format specification: {kind}")
    if job is None:
        return HEADERS[letter]
    norm = kind.islower()
    if job == WEIGHTS_ROW:
        if letter == "i":
            return "Weights"
        if letter in _WEIGHT:
            return f"{_weight(weights, letter):.0f}"
        if letter == "s":
            return "1"
        if letter == "t":
            return "" if norm else str(weights.get("tres") or "")
        return ""
    assert isinstance(job, dict)
    if letter == "i":
        return str(job["job_id"])
    if letter == "r":
        return job["partition"]
    if letter == "u":
        return job["user"]
    if kind == "Y":
        return str(job["priority"])
    if kind == "y":
        return f"{job['priority'] / 0xFFFFFFFF:16.14f}"
    if letter == "s":
        return str(job["site"])
    if letter == "n":
        return str(job["nice"])
    if letter == "t":
        return _tres(job, weights, norm=norm)
    value = job.get(_FACTOR[letter], 0.0)
    if not norm:
        return f"{value:.0f}"
    weight = _weight(weights, letter)
    return f"{value / weight if weight else 0.0:.7f}"


# sprio -S: letter -> the job's sort key (weighted and normalized letters sort alike).
_SORT = {
    "i": lambda j: j["job_id"],
    "N": lambda j: j["nice"],
    "r": lambda j: j["partition"],
    "u": lambda j: j["user"],
    **dict.fromkeys("Aa", lambda j: j["age"]),
    **dict.fromkeys("Ff", lambda j: j["fairshare"]),
    **dict.fromkeys("Jj", lambda j: j["jobsize"]),
    **dict.fromkeys("Pp", lambda j: j["partition_factor"]),
    **dict.fromkeys("Qq", lambda j: j["qos"]),
    **dict.fromkeys("Tt", lambda j: sum(j["tres"].values())),
    **dict.fromkeys("Yy", lambda j: j["priority"]),
}


def sort_jobs(jobs: list[dict], spec: str) -> list[dict]:
    """sprio's ``-S``: keys read from the end, each a stable sort, ``-`` before a
    letter for descending order."""
    out = list(jobs)
    for i in range(len(spec) - 1, -1, -1):
        char = spec[i]
        if char in ",+-":
            continue
        key = _SORT.get(char)
        if key is None:
            raise CliError(f"Invalid sort specification: {char}")
        descending = i > 0 and spec[i - 1] == "-"

        def compare(a: dict, b: dict, key=key, descending=descending) -> int:
            x, y = key(a), key(b)
            result = (x > y) - (x < y)
            return -result if descending else result

        out.sort(key=cmp_to_key(compare))
    return out


def render(jobs: list[dict], weights: dict, spec: str, *, header: bool, show_weights: bool) -> str:
    try:
        tokens = parse_format(spec)
    except ValueError as exc:
        raise CliError(str(exc)) from None

    def line(job: dict | int | None) -> str:
        parts = []
        for token in tokens:
            if isinstance(token, str):
                parts.append(token)
            else:
                parts.append(pad(cell(token, job, weights), token.width, token.right))
        return "".join(parts) + "\n"

    out = [line(None)] if header else []
    if show_weights:
        out.append(line(WEIGHTS_ROW))
    else:
        out.extend(line(job) for job in jobs)
    return "".join(out)


def _job_list(text: str) -> str:
    for item in text.split(","):
        if not (item.isascii() and item.isdigit() and int(item) > 0):
            raise CliError(f"Invalid job id: {item}")
    return text


def main(argv: list[str]) -> int:
    parser = make_parser("sprio", add_help=False)
    parser.add_argument("--help", action="help", help="show this help message")
    parser.add_argument("-h", "--noheader", action="store_true", help="no headers on output")
    parser.add_argument("-j", "--jobs", nargs="?", const="", default=None, help="jobs to view")
    parser.add_argument("-l", "--long", action="store_true", help="long report")
    parser.add_argument("-n", "--norm", action="store_true", help="display normalized values")
    parser.add_argument("-o", "--format", default=None, help="format specification")
    parser.add_argument("-p", "--partition", default="", help="comma separated list of partitions")
    parser.add_argument("-S", "--sort", default="i", help="comma separated list of fields to sort on")
    parser.add_argument("-u", "--user", "--users", dest="users", default="", help="users to view")
    parser.add_argument("-w", "--weights", action="store_true", help="show the weights of each factor")
    clusters.add_option(parser)
    parser.add_argument("job_list", nargs="?", default=None, help="jobs to view (after -j)")
    args = parser.parse_args(argv)
    jobs_text = args.jobs
    if args.job_list is not None:
        if jobs_text != "":
            parser.error(f"Unrecognized option: {args.job_list}")
        jobs_text = args.job_list
    params = {"user": args.users, "partition": args.partition}
    if jobs_text:
        params["job_id"] = _job_list(jobs_text)
    client = Client()
    if args.clusters:
        clusters.local_cluster(client, args.clusters, "sprio")
    try:
        answer = client.get("/api/priority/", {k: v for k, v in params.items() if v})
    except ApiError as exc:
        raise CliError(exc.message) from None
    assert isinstance(answer, dict)
    if answer.get("weights") is None:
        sys.stderr.write(NOT_MULTIFACTOR.format(answer.get("priority_type", "priority/basic")))
        return 1
    weights = answer["weights"]
    jobs = answer["jobs"]
    spec = args.format or default_format(weights, long=args.long, norm=args.norm, users=bool(args.users))
    if jobs_text and not jobs:
        sys.stdout.write(NO_MATCH)
        return 0
    jobs = sort_jobs(jobs, args.sort)
    sys.stdout.write(render(jobs, weights, spec, header=not args.noheader, show_weights=args.weights))
    return 0
