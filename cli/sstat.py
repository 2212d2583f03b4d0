"""``fsched sstat``: a running job's steps and their use, as Slurm's sstat prints them.

    sstat [-a] [-e] [-h] [-i] [-n] [--noconvert] [-o fields] [-p|-P] [-V] -j job[.step][,...]

Each job's running steps and their tasks' figures come from ``GET /api/jobs/{id}/usage/``
(the agents report them with each heartbeat: docs/agent-protocol.md); the fields and their
printing are ``slurmwords.sstat_fields``. Which steps print is sstat's choice: ``N.S`` that step
(``batch`` or a number); ``N`` alone its lowest-numbered srun step and never the batch
step (a batch job without srun steps prints nothing); with ``-a`` every running step.

The header comes first, then each job in the order given; a job that cannot be stat'd is
one error line (``No steps running for job N``, ``StepId=N.S not found running.``,
``couldn't get steps for job N``) and the others still print, and the exit status is 0, as
sstat's. Another user's step is slurmd's refusal (``Invalid user id``). Only a missing
``-j`` (``You didn't give me any jobs to stat.``), an unknown field or option and a job id
that does not read end with status 1.
"""

from __future__ import annotations

import sys

from cli.client import ApiError, Client
from slurmwords import sstat_fields
from slurmwords.hostlists import expand_hostlist

PROG = "sstat"
NORMAL_STEP = "0123456789"

HELP = """\
sstat [<OPTION>] -j <job(.stepid)>
    Valid <OPTION> values are:
      -a, --allsteps:
                   Print all steps for the given job(s) when no step is
                   specified.
      -e, --helpformat:
                   Print a list of fields that can be specified with the
                   '--format' option
     -h, --help:   Print this description of use.
     -i, --pidformat:
                   Predefined format to list the pids running for each
                   job step.  (JobId,Nodes,Pids)
     -j, --jobs:
                   Format is <job(.step)>. Stat this job step
                   or comma-separated list of job steps. This option is
                   required.  The step portion will default to the lowest
                   numbered (not batch, extern, etc) step running if not
                   specified, unless the --allsteps flag is set where not
                   specifying a step will result in all running steps
                   to be displayed. A step id of 'batch' will display the
                   information about the batch step. A step id of 'extern'
                   will display the information about the extern step
                   when using PrologFlags=contain.
     -n, --noheader:
                   No header will be added to the beginning of output.
                   The default is to print a header.
     --noconvert:  Don't convert units from their original type
                   (e.g. 2048M won't be converted to 2G).
     -o, --format:
                   Comma separated list of fields. (use "--helpformat"
                   for a list of available fields).
     -p, --parsable: output will be '|' delimited with a '|' at the end
     -P, --parsable2: output will be '|' delimited without a '|' at the end
     --usage:      Display brief usage message.
     -v, --verbose:
                   Primarily for debugging purposes, report the state of
                   various variables during processing.
     -V, --version: Print version.

"""
USAGE = "Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help\n"


class Fatal(Exception):
    """sstat's ``fatal()``: one line, exit 1."""


def parse_step(word: str) -> tuple[int, str | None]:
    """``12``, ``12.3``, ``12.batch``, ``12.extern``, ``12_3``: (job, step or None), as
    slurm_parse_step_str reads them (atoi: leading digits)."""
    if not word[:1].isdigit():
        raise Fatal(f"Bad job/step specified: {word}")
    name, dot, step = word.partition(".")
    chosen: str | None = None
    if dot:
        if step in ("batch", "extern", "interactive", "TBD"):
            chosen = step
        elif step[:1].isdigit():
            chosen = str(int(step[: len(step) - len(step.lstrip(NORMAL_STEP))]))
        else:
            raise Fatal(f"Bad step specified: {name}")
    number, under, task = name.partition("_")
    if under and not task[:1].isdigit():
        raise Fatal(f"Bad job array element specified: {number}")
    # sstat asks for the steps of the number before the "_" alone: 12_3 stats job 12.
    digits = number[: len(number) - len(number.lstrip(NORMAL_STEP))]
    return int(digits), chosen


def job_list(words: list[str]) -> list[tuple[int, str | None]]:
    """Every ``-j`` list and the first word after the options, duplicates dropped."""
    out: list[tuple[int, str | None]] = []
    for text in words:
        for word in text.split(","):
            if not word.strip():
                continue
            item = parse_step(word.strip())
            if item not in out:
                out.append(item)
    return out


def _parser():
    from cli.fmt import make_parser  # noqa: PLC0415

    p = make_parser(PROG, add_help=False)
    p.add_argument("-a", "--allsteps", action="store_true")
    p.add_argument("-e", "--helpformat", action="store_true")
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("-i", "--pidformat", action="store_true")
    p.add_argument("-j", "--jobs", action="append", default=[])
    p.add_argument("-n", "--noheader", action="store_true")
    p.add_argument("--noconvert", action="store_true")
    p.add_argument("-o", "--format", "--fields", dest="format", action="append", default=[])
    p.add_argument("-p", "--parsable", dest="parsable", action="store_const", const="p")
    p.add_argument("-P", "--parsable2", dest="parsable", action="store_const", const="P")
    p.add_argument("--usage", action="store_true")
    p.add_argument("-v", "--verbose", action="count", default=0)
    p.add_argument("-V", "--version", action="store_true")
    p.add_argument("rest", nargs="*")
    return p


def selected(steps: list[dict], step: str | None, all_steps: bool) -> list[dict]:
    """sstat's choice among a job's running steps (listed batch first, then by number)."""
    if step is not None:
        return [s for s in steps if s["step"] == step]
    if all_steps:
        return steps
    numbered = [s for s in steps if s["step"].isdigit()]
    return sorted(numbered, key=lambda s: int(s["step"]))[:1]


def _step_name(job_id: int, step: str | None) -> str:
    return f"StepId={job_id}.{step}"


def stat_job(client: Client, job_id: int, step: str | None, all_steps: bool) -> tuple[list, list[str]]:
    """(the steps to print, error lines) for one ``-j`` item."""
    try:
        answer = client.get(f"/api/jobs/{job_id}/usage/")
    except ApiError as exc:
        if exc.status == 403 and isinstance(exc.payload.get("steps"), list):
            errors = []
            for s in selected(exc.payload["steps"], step, all_steps):
                for node in expand_hostlist(s.get("node_list") or "") or [""]:
                    where = f"there was an error with the request to {node}"
                    errors.append(f"slurm_job_step_stat: {where} rc = {exc.message}")
                errors.append(
                    f"problem getting step_layout for {_step_name(job_id, s['step'])}: {exc.message}"
                )
            return [], errors or _none_running(job_id, step)
        if exc.status in (400, 404):
            return [], [f"couldn't get steps for job {job_id}"]
        raise
    steps = (answer.get("steps") or []) if isinstance(answer, dict) else []
    chosen = selected(steps, step, all_steps)
    if not chosen and (step is not None or not steps):
        return [], _none_running(job_id, step)
    return chosen, []


def _none_running(job_id: int, step: str | None) -> list[str]:
    if step is None:
        return [f"No steps running for job {job_id}"]
    return [f"{_step_name(job_id, step)} not found running."]


def main(argv: list[str]) -> int:
    ns = _parser().parse_args(argv)
    if ns.version:
        from slurmwords.version import VERSION_LINE  # noqa: PLC0415

        sys.stdout.write(VERSION_LINE)
        return 0
    if ns.help or ns.helpformat or ns.usage:
        # The last of them wins, as sstat keeps one opt_help; -h, -e and --usage are rarely mixed.
        sys.stdout.write(HELP if ns.help else sstat_fields.help_fields() if ns.helpformat else USAGE)
        return 0
    try:
        jobs = job_list(ns.jobs + ns.rest[:1])
    except Fatal as exc:
        sys.stderr.write(f"{PROG}: fatal: {exc}\n")
        return 1
    spec = (
        ",".join(([sstat_fields.PID_FIELDS] if ns.pidformat else []) + ns.format)
        or sstat_fields.DEFAULT_FIELDS
    )
    try:
        cols = sstat_fields.parse_fields(spec)
    except sstat_fields.FieldError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 1
    if not jobs:
        sys.stderr.write(f"{PROG}: error: You didn't give me any jobs to stat.\n")
        return 1
    opts = sstat_fields.Options(noconvert=ns.noconvert)
    out = sys.stdout
    if not ns.noheader:
        out.write(sstat_fields.header(cols, ns.parsable))
    client = Client()
    for job_id, step in jobs:
        chosen, errors = stat_job(client, job_id, step, ns.allsteps)
        for text in errors:
            out.flush()
            sys.stderr.write(f"{PROG}: error: {text}\n")
        for s in chosen:
            stats = sstat_fields.step_stats(job_id, s)
            if ns.pidformat:  # one line per node, its own pids (sstat -i)
                for node in stats.nodes:
                    one = sstat_fields.Stats(stats.job_step, nodes=[node], pids={node: stats.pids[node]})
                    out.write(sstat_fields.line(cols, one, ns.parsable, opts))
                continue
            out.write(sstat_fields.line(cols, stats, ns.parsable, opts))
    return 0
