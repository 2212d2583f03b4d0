"""``{{ e.node|node_url }}``: where an event's node field leads.  An event about several
nodes (a job's start, a reservation) holds a hostlist, ``node[01-08]``, which names no one
node's page: it leads to the node table filtered by that hostlist instead."""

from __future__ import annotations

from urllib.parse import urlencode

from django import template
from django.urls import reverse

register = template.Library()


@register.filter
def node_url(name: str) -> str:
    if any(c in name for c in "[,"):
        return f"{reverse('nodes')}?{urlencode({'view': 'table', 'name': name})}"
    return reverse("node", kwargs={"name": name})
