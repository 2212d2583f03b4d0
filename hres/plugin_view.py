"""What the console shows of the hres/lua plugins: a resource's plugin with its last
maintenance run and recent errors (the layer page), a job's plugin arguments and payload
(the job page, to its owner and staff only)."""

from __future__ import annotations

from typing import Any

from cluster.models import Job
from hres import lua_history, lua_plugins
from hres.models import JobPluginRun


def resource_plugin(resource: str) -> dict[str, Any] | None:
    """The resource's plugin section, its maintenance cycle's last run and its errors;
    None when the resource has no plugin."""
    plugin = lua_plugins.plugin_conf(resource)
    if plugin is None:
        return None
    return {
        "type": plugin.type,
        "path": plugin.path,
        "maintenance_cycle": plugin.maintenance_cycle,
        "maintenance_timeout": plugin.maintenance_timeout,
        "maintenance": lua_history.last_maintenance(resource),
        "errors": lua_history.recent(resource, 5),
    }


def job_plugin_runs(user: Any, job_id: int) -> list[dict[str, Any]] | None:
    """The plugin arguments and payload of each run and resource of the job, for its owner
    and staff; None for anyone else (the payload may carry a token: not even an account
    coordinator sees it, unlike the batch script)."""
    if not getattr(user, "is_authenticated", False):
        return None
    owner = Job.objects.filter(pk=job_id).values_list("user", flat=True).first()
    if owner is None or not (user.is_staff or owner == user.get_username()):
        return None
    return [
        {
            "run": r.run,
            "resource": r.resource,
            "plugin_args": sorted((r.prep.get("plugin_args") or {}).items()),
            "payload": r.prep.get("payload"),
            "async_running": bool(r.prep.get("async_running")),
        }
        for r in JobPluginRun.objects.filter(job_id=job_id).order_by("-run", "position")
    ]
