"""sbatch's file name patterns (``--output``, ``--error``, ``--input``), expanded as Slurm does.

The agent expands them where the job runs; the controller expands them to show
``StdOut=``/``StdErr=``; both call :func:`expand`, so the two never disagree.

    %%  a literal percent           %A  array master job id (the job id outside arrays)
    %a  array task id               %b  array task id modulo 10
    %J  jobid.stepid ("128" for the batch step, "128.0" for step 0)
    %j  job id                      %N  short host name (the batch host)
    %n  node id in the job (0)      %s  step id ("batch" for the batch step)
    %t  task id (0)                 %u  user name              %x  job name

A number between ``%`` and a numeric specifier zero-pads it (``%3a`` → ``007``), at most
10 wide.  Outside arrays ``%a`` is NO_VAL (4294967294), as in Slurm.  Slurm's corner
cases are kept so that a script's file names are the ones it had under Slurm: a pattern
containing a backslash is not expanded (its backslashes are dropped); ``%q`` (no such
specifier) stays as written; a width before a non-specifier leaves only its last digit
(``%3q`` → ``3q``); a trailing ``%`` is dropped.  Source: sbatch(1) "filename pattern"
and Slurm's ``expand_stdio_fields``.
"""

from __future__ import annotations

from dataclasses import dataclass

# Slurm's NO_VAL: what %a expands to for a job that is not an array task.
NO_VAL = 4294967294
MAX_WIDTH = 10
SPECIFIERS = frozenset("AabJjNnstux")


@dataclass(frozen=True)
class PatternFields:
    """The values a pattern can refer to; ``step_id`` None is the batch step."""

    job_id: int
    name: str = ""
    user: str = ""
    node: str = ""
    array_job_id: int | None = None
    array_task_id: int | None = None
    step_id: int | None = None
    # A step's task and node (srun -o/-e/-i, expanded per task on its node); 0 for batch.
    task_id: int = 0
    node_id: int = 0


def _value(spec: str, width: int, f: PatternFields) -> str:
    task = f.array_task_id if f.array_task_id is not None else NO_VAL
    numbers = {
        "A": f.array_job_id if f.array_task_id is not None and f.array_job_id is not None else f.job_id,
        "a": task,
        "b": task % 10,
        "j": f.job_id,
    }
    if spec in numbers:
        return str(numbers[spec]).zfill(width)
    if spec == "J":
        step = "" if f.step_id is None else f".{f.step_id}"
        return str(f.job_id).zfill(width) + step
    if spec == "s":
        return "batch" if f.step_id is None else str(f.step_id).zfill(width)
    if spec in "nt":  # a batch job's only node and task are number 0; never padded
        return str(f.node_id if spec == "n" else f.task_id)
    return {"N": f.node, "u": f.user, "x": f.name}[spec]


def expand(pattern: str, fields: PatternFields) -> str:
    """``pattern`` with its specifiers replaced (a relative name stays relative)."""
    if "\\" in pattern:
        return pattern.replace("\\", "")
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 == n:  # a trailing "%"
            break
        j = i + 1
        if pattern[j] == "%":
            out.append("%")
            i = j + 1
            continue
        width = 0
        if pattern[j].isdigit():
            end = j
            while end < n and pattern[end].isdigit():
                end += 1
            digits = int(pattern[j:end])
            # Slurm reads one digit, or the whole run when it is over 9 (then capped at 10).
            after = end if digits > 9 else j + 1
            if after < n and pattern[after] in SPECIFIERS:
                width, j = min(digits, MAX_WIDTH), after
            else:
                out.append(pattern[end - 1])
                i = end
                continue
        spec = pattern[j]
        out.append(_value(spec, width, fields) if spec in SPECIFIERS else "%" + spec)
        i = j + 1
    return "".join(out)
