"""job_submit/lua as a cluster extension: ``slurm_job_submit`` at submission and
``slurm_job_modify`` at ``scontrol update`` of a job (Slurm's job_submit_plugins.html)."""

from __future__ import annotations

import logging
import pwd
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from cluster.core.slurmconf import ConfigError, ConfigProblem
from cluster.extensions import ClusterExtension, ConfigCheck, Filtered
from cluster.models import Partition
from cluster.services.errors import ServiceError
from jobsubmit import script as scripts
from jobsubmit.core import desc
from luaplug import CallFailed, CallResult, LuaScript, ScriptError, strerror
from luaplug.codes import SUCCESS

log = logging.getLogger("fsched.job_submit")

# No Slurm option bounds job_submit.lua; fsched stops it at MessageTimeout (Slurm's 10 s
# default), the time a client waits for the controller's answer anyway.
DEFAULT_TIMEOUT = 10


def _conf_dir() -> Path:
    return Path(settings.CONF_DIR)


def identity(username: str) -> desc.Identity:
    """The job's user as Slurm's job_desc gives it: the uid and gid of that login on the
    controller's host, none for an fsched account without one."""
    try:
        pw = pwd.getpwnam(username)
    except (KeyError, ValueError):
        return desc.Identity(username)
    return desc.Identity(username, pw.pw_uid, pw.pw_gid)


def _partitions() -> dict[str, dict[str, Any]]:
    from cluster.core import hostlists  # noqa: PLC0415 - ClusterShell only when called

    out: dict[str, dict[str, Any]] = {}
    for p in Partition.objects.all():
        info = desc.PartitionInfo(
            name=p.name,
            nodes=p.nodes,
            total_nodes=hostlists.count(p.nodes) if p.nodes else 0,
            is_default=p.is_default,
            state=p.state,
            max_time=p.max_time,
            default_time=p.default_time,
            max_nodes=p.max_nodes,
            min_nodes=p.min_nodes,
            priority_tier=p.priority_tier,
            priority_job_factor=p.priority_job_factor,
        )
        out[p.name] = desc.part_entry(info)
    return out


def _job_rec(job: Any, who: desc.Identity) -> dict[str, Any]:
    """The job's record as slurm_job_modify's job_rec (read only), by Slurm's names."""
    rec = {
        "job_id": job.id,
        "array_job_id": job.array_job_id or 0,
        "array_task_id": desc.NO_VAL if job.array_task_id is None else job.array_task_id,
        "job_state": desc.JOB_STATES.get(str(job.state), 0),
        "user_name": job.user,
        "user_id": who.user_id,
        "group_id": who.group_id,
        "account": job.account or None,
        "partition": job.partition or None,
        "qos": job.qos or None,
        "name": job.name or None,
        "comment": job.comment or None,
        "licenses": job.licenses or None,
        "features": job.features or None,
        "work_dir": job.work_dir or None,
        "time_limit": desc.INFINITE if job.time_limit is None else job.time_limit,
        "min_nodes": job.min_nodes,
        "max_nodes": job.max_nodes or 0,
        "num_tasks": job.num_tasks,
        "cpus_per_task": job.cpus_per_task,
        "tres_per_node": desc.tres_per_node(job.gres),
        "priority": job.priority,
    }
    return {k: v for k, v in rec.items() if v is not None}


def _option_line(conf: Any, path: Path, key: str) -> tuple[str, int]:
    """Where slurm.conf (or an included file) sets ``key`` last."""
    for line in reversed(conf.lines):
        if any(k.lower() == key.lower() for k, _ in line.pairs):
            return line.file, line.line
    return str(path), 0


def _timeout(cfg: Any) -> float:
    return float(cfg.option_int("MessageTimeout", DEFAULT_TIMEOUT) or DEFAULT_TIMEOUT)


def _call(script: LuaScript, function: str, *args: Any, cfg: Any) -> CallResult:
    """The call, or the submission refused as slurmctld refuses it when the script fails:
    the Lua error as the message for the submitter, "Unspecified error" after it."""
    try:
        return script.call(function, *args, timeout=_timeout(cfg))
    except CallFailed as exc:
        log.error("%s/lua: %s: %s", function.removeprefix("slurm_"), script.path, exc)
        raise ServiceError(strerror(-1), err_msg=f"{scripts.PLUGIN}: {function}: {exc}") from None


def _refused(result: CallResult) -> ServiceError:
    return ServiceError(strerror(result.rc), err_msg=result.user_msg)


class JobSubmitExtension(ClusterExtension):
    name = "job_submit"

    def check_config(self, conf: Any, *, path: Path, node_names: set[str]) -> ConfigCheck:
        # slurmctld loads job_submit.lua with its configuration and does not start when it
        # cannot; a reconfigure keeps the script loaded before (logged as a warning).
        # slurmctld does not start with a plugin it cannot find; lua is the one fsched has.
        unknown = [name for name in scripts.plugin_names(conf.options) if name != "lua"]
        if unknown:
            file, line = _option_line(conf, path, "JobSubmitPlugins")
            raise ConfigError(
                [
                    ConfigProblem(
                        file, line, f"JobSubmitPlugins: job_submit/{name} is not available (only lua)"
                    )
                    for name in unknown
                ]
            )
        if not scripts.enabled(conf.options):
            return ConfigCheck(None)
        try:
            script, warning = scripts.prepare(path.parent, conf.options)
        except ScriptError as exc:
            problem = ConfigProblem(str(exc.path), exc.line, f"{scripts.PLUGIN}: {exc.reason}")
            raise ConfigError([problem]) from None
        return ConfigCheck(script, (warning,) if warning else ())

    def config_loaded(self, checked: ConfigCheck | None, *, actor: str, recover: bool, version: int) -> None:
        scripts.install(checked.value if checked is not None else None)

    def _script(self, cfg: Any) -> LuaScript | None:
        if not scripts.enabled(cfg.options):
            return None
        try:
            return scripts.current(_conf_dir(), cfg.options)
        except ScriptError as exc:
            log.error("%s", exc)
            raise ServiceError(strerror(-1), err_msg=str(exc)) from None

    def job_submit(self, request: Mapping[str, Any], *, user: Any, cfg: Any) -> Filtered | None:
        script = self._script(cfg)
        if script is None:
            return None
        who = identity(user.get_username())
        before = desc.job_desc(request, who)
        table = script.table(before)
        result = _call(script, "slurm_job_submit", table, script.table(_partitions()), who.user_id, cfg=cfg)
        if result.rc != SUCCESS:
            raise _refused(result)
        try:
            changed, ignored = desc.changed_spec(request, before, script.to_python(table))
        except desc.DescError as exc:
            raise ServiceError(strerror(-1), err_msg=f"{scripts.PLUGIN}: {exc}") from None
        for name in ignored:
            # As Slurm's _set_job_req_field for a field it cannot set.
            log.error("%s: _set_job_field: unrecognized field: %s", scripts.PLUGIN, name)
        return Filtered(changed, result.user_msg)

    def job_modify(self, changes: Mapping[str, Any], *, job: Any, user: Any, cfg: Any) -> Filtered | None:
        script = self._script(cfg)
        if script is None:
            return None
        who = identity(job.user)
        before = desc.modify_desc(changes)
        table = script.table(before)
        modifier = identity(user.get_username()).user_id
        result = _call(
            script,
            "slurm_job_modify",
            table,
            script.table(_job_rec(job, who)),
            script.table(_partitions()),
            modifier,
            cfg=cfg,
        )
        if result.rc != SUCCESS:
            raise _refused(result)
        try:
            changed, ignored = desc.changed_modify(changes, before, script.to_python(table))
        except desc.DescError as exc:
            raise ServiceError(strerror(-1), err_msg=f"{scripts.PLUGIN}: {exc}") from None
        for name in ignored:
            log.error("%s: _set_job_field: unrecognized field: %s", scripts.PLUGIN, name)
        return Filtered(changed, result.user_msg)


__all__ = ["JobSubmitExtension"]
