"""``fsched scancel``: cancel or signal jobs (``POST /api/jobs/cancel/``).

Job ids and filters go in one bulk request; the API answers which jobs it
cancelled and, per job, why it did not (``Access/permission denied``, ...).
Each refusal is printed as Slurm prints it and makes the exit status 1.
"""

from __future__ import annotations

import sys

from cli import clusters
from cli.fmt import make_parser
from slurmwords.step_ids import step_label, step_number
from slurmwords.version import VERSION_LINE

PROG = "scancel"


def parse_job_ids(words: list[str]) -> list[int | str]:
    """``12``, ``12_3``, ``12_[1-3,5]`` (also comma lists) -> ``[12, "12_3", "12_1", ...]``.

    Raises ``ValueError`` naming the bad word, which Slurm reports as
    ``Invalid job id``.
    """
    ids: list[int | str] = []
    for word in words:
        for item in _split(word):
            job, sep, task = item.partition("_")
            if not job.isdigit():
                raise ValueError(item)
            if not sep:
                ids.append(int(job))
            elif task.isdigit():
                ids.append(f"{int(job)}_{int(task)}")
            elif task.startswith("[") and task.endswith("]"):
                for part in task[1:-1].split(","):
                    low, _, high = part.split("%")[0].partition("-")
                    if not low.isdigit() or (high and not high.isdigit()):
                        raise ValueError(item)
                    ids.extend(f"{int(job)}_{n}" for n in range(int(low), int(high or low) + 1))
            else:
                raise ValueError(item)
    return ids


def split_steps(words: list[str]) -> tuple[list[tuple[int, int]], list[str]]:
    """``12.0``, ``12.interactive`` (also in comma lists): the steps ``scancel JOBID.STEP``
    ends, the job kept; and the other ids, for :func:`parse_job_ids`."""
    steps: list[tuple[int, int]] = []
    jobs: list[str] = []
    for word in words:
        for item in _split(word):
            if "." not in item:
                jobs.append(item)
                continue
            job, _, step = item.partition(".")
            number = step_number(step)
            if not job.isdigit() or number is None:
                raise ValueError(item)
            steps.append((int(job), number))
    return steps, jobs


def cancel_steps(client, steps: list[tuple[int, int]], signal: str | None) -> bool:
    """Cancel (or signal, with -s) each step; True if any failed, each failure printed."""
    from cli.client import ApiError  # noqa: PLC0415

    failed = False
    for job, step in steps:
        path = f"/api/jobs/{job}/steps/{step}/"
        try:
            if signal:
                client.post(path + "signal/", {"signal": signal})
            else:
                client.post(path + "cancel/", {})
        except ApiError as exc:
            name = f"{job}.{step_label(step)}"
            sys.stderr.write(f"{PROG}: error: Kill job error on job step id {name}: {exc.message}\n")
            failed = True
    return failed


def _split(word: str) -> list[str]:
    """Split on commas outside ``[...]`` (``12_[1,3],14``)."""
    parts, depth, current = [], 0, ""
    for char in word:
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def build_parser():
    p = make_parser(PROG, usage="%(prog)s [OPTIONS] [job_id[_array_id][.step_id]]")
    add = p.add_argument
    add("-A", "--account", metavar="account", help="act only on jobs charging this account")
    add("-b", "--batch", action="store_true", help="signal batch shell for specified job")
    add("-f", "--full", action="store_true", help="signal all steps including the batch step")
    add("-i", "--interactive", action="store_true", help="require response from user for each job")
    add("-n", "--name", "--jobname", dest="name", metavar="job_name", help="act only on jobs with this name")
    add("-p", "--partition", metavar="partition", help="act only on jobs in this partition")
    add("-q", "--qos", metavar="qos", help="act only on jobs with this quality of service")
    clusters.add_option(p)
    add("--me", action="store_true", help="equivalent to --user=<my username>")
    add("-s", "--signal", metavar="name|int", help="signal to send to job, default is SIGKILL")
    add("-t", "--state", "--states", dest="state", metavar="states", help="act only on jobs in this state")
    add("-u", "--user", metavar="user_name", help="act only on jobs of this user")
    add("-v", "--verbose", action="count", default=0, help="verbosity level")
    add("-V", "--version", action="store_true", help="output version information and exit")
    add("job_ids", nargs="*", help="job id(s) to cancel")
    return p


def normalize_signal(value: str | None) -> str | None:
    """``SIGTERM``/``term``/``15`` -> ``TERM``/``15`` (the API takes the name or number)."""
    if value is None:
        return None
    value = value.strip().upper()
    return value[3:] if value.startswith("SIG") else value


def build_request(ns, job_ids: list[int | str]) -> dict:
    """The ``POST /api/jobs/cancel/`` body for the parsed options."""
    body: dict = {}
    if job_ids:
        body["job_ids"] = job_ids
    for key in ("user", "partition", "name", "account"):
        if getattr(ns, key, None):
            body[key] = getattr(ns, key)
    if ns.state:
        body["state"] = ns.state.upper()
    signal = normalize_signal(ns.signal)
    if signal:
        body["signal"] = signal
        # Slurm: a signal reaches the job's steps; -b the batch shell alone, -f both.
        if getattr(ns, "full", False):
            body["scope"] = "full"
        elif getattr(ns, "batch", False):
            body["scope"] = "batch"
    return body


def select_by_qos(client, ns, job_ids: list[int | str]) -> list[int]:
    params = {
        "qos": ns.qos,
        "user": ns.user,
        "partition": ns.partition,
        "name": ns.name,
        "account": ns.account,
    }
    params["state"] = ns.state.upper() if ns.state else None
    if job_ids:
        params["job_id"] = ",".join(str(j) for j in job_ids)
    return [int(job["job_id"]) for job in client.get_all("/api/jobs/", params)]


def error_line(item: dict) -> str:
    """One refusal as Slurm words it: ``scancel: error: Kill job error on job id 12: ...``."""
    message = str(item.get("error") or "Unspecified error")
    if not message.startswith("Kill job error"):
        message = f"Kill job error on job id {item.get('job_id')}: {message}"
    return f"{PROG}: error: {message}"


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    if ns.version:
        sys.stdout.write(VERSION_LINE)
        return 0
    try:
        steps, job_words = split_steps(ns.job_ids)
        job_ids = parse_job_ids(job_words)
    except ValueError as exc:
        sys.stderr.write(f"{PROG}: error: Invalid job id {exc}\n")
        return 1
    from cli.client import ApiError, Client, current_user  # noqa: PLC0415

    if ns.me:
        ns.user = current_user()
    if steps:
        failed = cancel_steps(Client(), steps, normalize_signal(ns.signal))
        if not job_ids:
            return 1 if failed else 0
    if ns.state:
        from slurmwords.job_state_names import state_name  # noqa: PLC0415

        if state_name(ns.state) is None:
            # scancel's own lines (fprintf, no "scancel: error:"), before any request.
            sys.stderr.write(f"Invalid job state specified: {ns.state}\n")
            sys.stderr.write("Valid job states are PENDING, RUNNING, and SUSPENDED\n")
            return 1
    if not job_ids and not any((ns.user, ns.partition, ns.name, ns.account, ns.qos, ns.state)):
        sys.stderr.write(f"{PROG}: error: No job identification provided\n")
        return 1
    client = Client()
    if ns.clusters:
        clusters.local_cluster(client, ns.clusters, PROG)
    filters = filters_text(ns)
    try:
        if ns.user and not ns.me:
            from cli.user_names import resolved, unknown_users  # noqa: PLC0415

            if unknown_users(client, [ns.user]):
                # scancel's _opt_verify (src/scancel/opt.c): refused before any request.
                sys.stderr.write(f"{PROG}: error: Invalid user name: {ns.user}\n")
                return 1
            ns.user = resolved([ns.user])[ns.user]
        if ns.qos:
            # The bulk cancel has no qos filter: select the jobs first, so a
            # filter the server would not understand can never widen the cancel.
            job_ids = select_by_qos(client, ns, job_ids)
            if not job_ids:
                no_match(ns, filters)
                return 0
            ns.user = ns.partition = ns.name = ns.account = ns.state = None
        answer = client.post("/api/jobs/cancel/", build_request(ns, job_ids))
    except ApiError as exc:
        sys.stderr.write(f"{PROG}: error: {exc.message}\n")
        return 1
    errors = answer.get("errors", []) if isinstance(answer, dict) else []
    for item in errors:
        sys.stderr.write(error_line(item) + "\n")
    cancelled = answer.get("cancelled", []) if isinstance(answer, dict) else []
    if ns.verbose:
        for job_id in cancelled:
            sys.stderr.write(f"{PROG}: Terminating job {job_id}\n")
    if not cancelled and not errors:
        no_match(ns, filters)
    return 1 if errors else 0


def no_match(ns, filters: str) -> None:
    """scancel -v of filters no job matched says so (src/scancel/scancel.c,
    _log_filter_err_msg); the exit status stays 0."""
    if ns.verbose and filters:
        sys.stderr.write(f"{PROG}: error: No active jobs match ALL job filters, including: {filters}\n")


def filters_text(ns) -> str:
    """scancel -v's list of the filters that matched no job, in its order and words
    (src/scancel/scancel.c, _filters2str: each "name=value " with its space)."""
    from slurmwords.job_state_names import state_name  # noqa: PLC0415

    items = [
        ("account", ns.account),
        ("job_name", ns.name),
        ("partition", ns.partition),
        ("qos", ns.qos),
        ("state", state_name(ns.state) if ns.state else None),
        ("user_name", ns.user),
    ]
    return "".join(f"{key}={value} " for key, value in items if value)
