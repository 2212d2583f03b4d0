"""The job options sbatch, salloc and srun refuse before asking the controller.

Slurm's commands parse these options themselves (src/common/slurm_opt.c, proc_args.c)
and exit 1 with their own line, so a script that checks ``sbatch -t abc``'s words sees
"Invalid --time specification", never the controller's "Batch job submission failed".
The controller checks every field again: this only gives the refusal Slurm's words.
"""

from __future__ import annotations

# parse_int(name, arg, positive=true): the value must be a whole number above zero.
POSITIVE_INTS = (
    ("ntasks", "--ntasks"),
    ("cpus_per_task", "--cpus-per-task"),
    ("ntasks_per_node", "--ntasks-per-node"),
)


def _is_count(text: str) -> bool:
    """verify_node_count's one count: digits, an optional k/m multiplier (no ``re``: the
    submission's start-up budget, cli/__init__.py)."""
    digits = text.strip()
    if digits[-1:] in ("k", "K", "m", "M"):
        digits = digits[:-1]
    return digits.isascii() and digits.isdigit()


def numeric_value(value: object, flag: str) -> str:
    """parse_int's refusal."""
    return f'Invalid numeric value "{value}" for {flag}.'


def _node_count(text: str) -> str | None:
    # fsched takes min[-max]; "1,3,5" job sizes reach the controller, which refuses them.
    if "," in text or ":" in text:
        return None
    parts = text.split("-", 1) if "-" in text else [text]
    for part in parts:
        if not _is_count(part):
            return f'"{part}" is not a valid node count'
    return None


# Options whose refusal is "Invalid <flag> specification".
TEXT_OPTIONS = (
    ("time", "--time"),
    ("time_min", "--time-min"),
    ("mem", "--mem"),
    ("mem_per_cpu", "--mem-per-cpu"),
    ("begin", "--begin"),
    ("signal", "--signal"),
)


def _parses(dest: str, text: str) -> bool:
    """Whether the controller's own parser takes the option, imported only when the option
    is given (the submission's start-up budget: begin_time and job_options import ``re``)."""
    try:
        if dest in ("time", "time_min"):
            from slurmwords.durations import parse_time_limit  # noqa: PLC0415

            parse_time_limit(text)
        elif dest in ("mem", "mem_per_cpu"):
            from slurmwords.memory import parse_memory_mb  # noqa: PLC0415

            parse_memory_mb(text)
        elif dest == "begin":
            from datetime import datetime  # noqa: PLC0415

            from slurmwords.begin_time import parse_begin_time  # noqa: PLC0415

            parse_begin_time(text, datetime.now().astimezone())
        else:
            from slurmwords.job_options import parse_signal  # noqa: PLC0415

            parse_signal(text)
    except ValueError:
        return False
    return True


def settle_exclusive(opts: dict) -> str | None:
    """``--exclusive[=exclusive|oversubscribe|user|mcs]`` (arg_set_exclusive) as the
    request's flags, in place; the refusal's line, or None."""
    given = opts.get("exclusive")
    if given is None or given is True:
        return None
    word = str(given).lower()
    if word in ("", "exclusive"):
        opts["exclusive"] = True
    elif word == "oversubscribe":
        opts["exclusive"] = None
        opts["oversubscribe"] = True
    elif word in ("user", "mcs"):
        return f"--exclusive={given} is not supported by fsched"
    else:
        return "Invalid --exclusive specification"
    return None


def first_problem(opts: dict) -> str | None:
    """Slurm's error line (without the command's prefix) for the first option it would
    refuse itself, or None. Settles ``--exclusive``'s value in place."""
    if problem := settle_exclusive(opts):
        return problem
    if isinstance(nodes := opts.get("nodes"), str) and (problem := _node_count(nodes)):
        return problem
    for dest, flag in POSITIVE_INTS:
        value = opts.get(dest)
        if isinstance(value, int) and value <= 0:
            return numeric_value(value, flag)
    for dest, flag in TEXT_OPTIONS:
        if isinstance(text := opts.get(dest), str) and not _parses(dest, text):
            return f"Invalid {flag} specification"
    return None
