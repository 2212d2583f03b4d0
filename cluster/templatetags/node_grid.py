"""The node grid's tiles, written in one pass in Python.

A grid of 10,000 nodes through a template loop costs some 170,000 variable lookups,
localisations and escapes: most of a second on a loaded machine.  Here each tile is one
f-string with every value from the database escaped (``html.escape``, the function
Django's own ``escape`` filter calls), and the parts that depend only on a node's look
(its classes and state word) built once per look.
"""

from __future__ import annotations

from html import escape
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from cluster.selectors import NodeLook, NodeTile

register = template.Library()


def _look_attrs(look: NodeLook) -> tuple[str, str, str]:
    """(class attribute, state word, scontrol state) of every tile with this look, escaped."""
    css = f"tile s-{look.colour}"
    if look.power:
        css += f" {look.power}"
    if look.not_responding:
        css += " nr"
    return escape(css), escape(look.state), escape(look.state_full)


def tile_items(tiles: list[NodeTile], *, nodes_url: str, compact: bool, ids: bool) -> SafeString:
    """The ``<li>`` of each tile: name, state, and unless ``compact`` the CPU bar, the CPUs
    allocated and the reason.  ``ids`` gives each link ``id="tile-NAME"`` (so a live
    refresh can put the keyboard focus back), which only an ungrouped grid may do: a grouped
    grid shows a node once per partition."""
    looks: dict[NodeLook, tuple[str, str, str]] = {}
    url = escape(nodes_url)
    out = []
    add = out.append
    for raw_name, look, cpus, alloc, raw_reason in tiles:
        attrs = looks.get(look)
        if attrs is None:
            attrs = looks[look] = _look_attrs(look)
        css, state, state_full = attrs
        name = escape(raw_name)
        anchor = f' id="tile-{name}"' if ids else ""
        # NodeTile.title and NodeTile.cpu_pct, inlined: a property call per tile shows here.
        title = f"{name}: {state_full}, CPUs {alloc}/{cpus}"
        reason = escape(raw_reason) if raw_reason else ""
        if reason:
            title = f"{title}, Reason={reason}"
        head = (
            f'<li class="{css}" data-node="{name}" data-state="{state}">'
            f'<a href="{url}{name}/" title="{title}"{anchor}>'
            f'<span class="tile-name">{name}</span><span class="tile-state">{state}</span>'
        )
        if compact:
            add(f"{head}</a></li>")
            continue
        pct = min(100, round(100 * alloc / cpus)) if cpus else 0
        if reason:
            reason = f'<span class="tile-reason"><span class="sr-only">Reason </span>{reason}</span>'
        add(
            f'{head}<span class="tile-bar" aria-hidden="true"><span style="width:{pct}%"></span></span>'
            f'<span class="tile-cpu"><span class="sr-only">CPUs allocated </span>{alloc}/{cpus}</span>'
            f"{reason}</a></li>"
        )
    return mark_safe("".join(out))  # noqa: S308 - every value above is escaped


@register.simple_tag(takes_context=True)
def node_tiles(context: Any, tiles: list[NodeTile]) -> SafeString:
    return tile_items(
        tiles,
        nodes_url=context["nodes_url"],
        compact=bool(context.get("compact")),
        ids=not context.get("grouped"),
    )
