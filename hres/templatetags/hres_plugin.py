"""``{% hres_job_plugin job_id %}``: the job page's hres/lua section, so the cluster's
job view needs no knowledge of the hres extension (hres.plugin_view decides who sees it)."""

from __future__ import annotations

from typing import Any

from django import template

from hres.plugin_view import job_plugin_runs

register = template.Library()


@register.inclusion_tag("hres/_job_plugin.html", takes_context=True)
def hres_job_plugin(context: template.Context, job_id: int) -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    return {"runs": job_plugin_runs(user, job_id) if user is not None else None}
