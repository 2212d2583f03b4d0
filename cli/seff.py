"""``fsched seff JOBID``: how well a job used what it was given, as Slurm's contribs/seff
prints it (its lines, words, number formats and exit statuses).

    seff [-h] [-v] [-d] <Jobid>

The job is read from the accounting API that sacct reads (``GET /api/accounting/jobs/``:
AllocCPUS, Elapsed, AllocTRES, and the steps' TotalCPU, MaxRSS and NTasks); the arithmetic
and the lines are :mod:`slurmwords.efficiency`. As seff's options are Perl's ``getopts``:
single letters, bundled (``-dv``), an unknown one warned about and passed over; ``-v`` and
``-h`` (or not exactly one job id) print and end with status 1, as seff's do. A job id
that is not a number ends as Slurm's parser ends it (``fatal: Bad job/step specified``);
a job that is not there, or that the caller may not see, is ``Job not found.``, status 2.
"""

from __future__ import annotations

import sys

PROG = "seff"
API = "/api/accounting/jobs/"
USAGE = """\
Usage: seff [Options] <Jobid>
       Options:
       -h    Help menu
       -v    Version
       -d    Debug mode: display raw Slurm data
"""
_FLAGS = "hvd"
_WITH_VALUE = "f"  # seff's getopts takes -f FILE and never reads it


class Fatal(Exception):
    """Slurm's ``fatal()`` in the job id parser: one line, status 1."""


def getopts(argv: list[str]) -> tuple[set[str], list[str]]:
    """Perl's ``getopts('hvdf:')``: the letters seen and the words after the options."""
    seen: set[str] = set()
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if word in ("--help", "--version"):
            # Getopt::Std's own: it prints Perl's generic option help and goes on (seff does
            # not set STANDARD_HELP_VERSION), so seff then prints its usage for want of a job id.
            i += 1
            continue
        if not word.startswith("-") or word == "-":
            break
        letters = word[1:]
        while letters:
            letter, letters = letters[0], letters[1:]
            if letter in _WITH_VALUE:
                if not letters:
                    i += 1
                letters = ""
                seen.add(letter)
            elif letter in _FLAGS:
                seen.add(letter)
            else:
                sys.stderr.write(f"Unknown option: {letter}\n")
        i += 1
    return seen, argv[i:]


def job_param(word: str) -> str:
    """The job of ``N``, ``N_T``, ``N.step`` as Slurm's step parser reads it (``atoi``: its
    leading digits) for the API's ``job_id``: ``N`` or ``N_T``."""
    if not word[:1].isdigit():
        raise Fatal(f"Bad job/step specified: {word}")
    name, dot, step = word.partition(".")
    if dot and step not in ("batch", "extern", "interactive", "TBD") and not step[:1].isdigit():
        raise Fatal(f"Bad step specified: {name}")
    number, under, task = name.partition("_")
    if under and not task[:1].isdigit():
        raise Fatal(f"Bad job array element specified: {number}")
    job = number[: len(number) - len(number.lstrip("0123456789"))]
    return f"{int(job)}_{int(_digits(task))}" if under else str(int(job))


def _digits(text: str) -> str:
    return text[: len(text) - len(text.lstrip("0123456789"))]


def main(argv: list[str]) -> int:
    opts, rest = getopts(argv)
    if "v" in opts:
        from slurmwords.efficiency import SEFF_VERSION  # noqa: PLC0415

        sys.stdout.write(f"seff Version {SEFF_VERSION}\n")
        return 1
    if "h" in opts or len(rest) != 1:
        sys.stdout.write(USAGE)
        return 1
    try:
        job_id = job_param(rest[0])
    except Fatal as exc:
        sys.stderr.write(f"fatal: {exc}\n")
        return 1
    from cli.client import ApiError, Client  # noqa: PLC0415
    from slurmwords import efficiency  # noqa: PLC0415

    try:
        answer = Client().get(API, {"job_id": job_id, "all_users": "1", "limit": "1"})
    except ApiError as exc:
        if exc.status != 400:  # 400: a number past the largest job id, which no job has
            raise
        answer = {}
    jobs = answer.get("jobs") if isinstance(answer, dict) else None
    if not jobs:
        sys.stderr.write("Job not found.\n")
        return 2
    job = jobs[0]
    e = efficiency.of_job(job, efficiency.primary_group(job.get("user") or ""))
    lines = (efficiency.debug_lines(e) if "d" in opts else []) + efficiency.report(e)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
