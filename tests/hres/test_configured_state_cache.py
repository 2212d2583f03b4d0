"""hres.services.configured_state kept per process (#18 simulator speed: every submission
asking for a resource reads it): the kept state equals one built afresh after each change
that may alter it (a kept layer update, a reconfigure, another node list), and a second
read with nothing changed is the kept one."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from cluster.services.configuration import config_load
from hres import services
from hres.core.layers import build_state
from hres.models import LayerUpdate

pytestmark = pytest.mark.django_db

CONF = Path(__file__).resolve().parents[1] / "simulator" / "conf"


def afresh(nodes: tuple[str, ...] | None = None):
    """configured_state as it was computed before it was kept."""
    nodes = services._node_names() if nodes is None else nodes
    state = build_state(services.current_config(), nodes)
    return services._replay(state, LayerUpdate.objects.filter(keep=True).order_by("id"))


def counts(state) -> dict[str, list[int | None]]:
    return {r.structure.name: [la.count for la in r.structure.layers] for r in state.resources}


def test_the_kept_state_follows_updates_reconfigures_and_node_lists(settings):
    settings.CONF_DIR = CONF
    config_load(path=CONF / "slurm.conf")
    first = services.configured_state()
    assert first == afresh() and counts(first) == {"lic": [2]}
    assert services.configured_state() is first  # nothing changed: the kept one

    # A runtime update that is not kept leaves the configured layers alone ...
    LayerUpdate.objects.create(time=timezone.now(), resource="lic", layer="all", changes={"count": 7})
    assert services.configured_state() is first
    # ... a kept one changes them.
    now = timezone.now()
    LayerUpdate.objects.create(time=now, resource="lic", layer="all", changes={"count": 5}, keep=True)
    updated = services.configured_state()
    assert updated == afresh() and counts(updated) == {"lic": [5]}

    # Another node list is another state.
    fewer = ("m1", "m2", "n1", "n2")
    assert services.configured_state(fewer) == afresh(fewer)
    assert services.configured_state(fewer).nodes == fewer

    # A reconfigure (a new version of resources.yaml) drops the kept updates that are
    # not a dynamic node's, and the state is built again.
    config_load(path=CONF / "slurm.conf")
    again = services.configured_state()
    assert again == afresh()


class _Names(tuple):
    """A node list that counts how often it is hashed or compared."""

    uses = 0

    def __hash__(self):
        type(self).uses += 1
        return super().__hash__()

    def __eq__(self, other):
        type(self).uses += 1
        return super().__eq__(other)


def test_the_kept_state_is_found_without_hashing_the_node_list(settings):
    # Every submission asking for a resource reads it with the kept node list (10,000 names
    # at #18's size): found by identity, the list neither hashed nor compared.
    settings.CONF_DIR = CONF
    config_load(path=CONF / "slurm.conf")
    nodes = _Names(services._node_names())
    first = services.configured_state(nodes)
    _Names.uses = 0
    assert services.configured_state(nodes) is first
    assert _Names.uses == 0
    assert services.configured_state(tuple(nodes)) is first  # an equal list: the same state
