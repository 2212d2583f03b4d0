"""hres/lua's function names, which the controller (hres/lua_plugins.py) and the node agent
(agent/hres_node.py) both check a script against: one list, so they cannot disagree."""

from __future__ import annotations

PLUGIN = "hres/lua"
# Every function of hres/lua but hres_validate_args and hres_controller_job_async_prerun.
REQUIRED = (
    "hres_create_context",
    "hres_destroy_context",
    "hres_maintenance",
    "hres_controller_job_prerun",
    "hres_controller_job_revoke",
    "hres_controller_job_epilog",
    "hres_node_job_prolog",
    "hres_node_job_epilog",
    "hres_node_task_prolog",
    "hres_node_task_epilog",
    "hres_node_user_task_prolog",
)
OPTIONAL = ("hres_validate_args", "hres_controller_job_async_prerun")
