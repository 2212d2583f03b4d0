"""Shared fixtures: the keys, users, the demo configuration loaded, an API client per user."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
DEMO_CONF = ROOT / "examples" / "demo"

# Keys of the suite's own: importing the settings reads the state directory's keys only,
# and a checkout that never ran `manage.py fsched_bootstrap` has none (nor should tests
# sign with a developer's).  pytest-django has set Django up by the time this runs.
settings.SECRET_KEY = secrets.token_urlsafe(50)
settings.FSCHED_AGENT_KEY = secrets.token_urlsafe(32)


@pytest.fixture
def users(db):
    from django.contrib.auth import get_user_model

    model = get_user_model()
    return {
        "alice": model.objects.create_user("alice", password="alice-pw"),
        "bob": model.objects.create_user("bob", password="bob-pw"),
        "admin": model.objects.create_superuser("admin", password="admin-pw"),
    }


@pytest.fixture
def demo(db, settings):
    """The demo slurm.conf loaded into the database."""
    from cluster.services.configuration import config_load

    settings.CONF_DIR = DEMO_CONF
    return config_load(path=DEMO_CONF / "slurm.conf")


@pytest.fixture
def demo_basic(db, settings, tmp_path):
    """The demo configuration under PriorityType=priority/basic (the demo's says multifactor,
    Slurm's default: with no weight set every job's priority is 1)."""
    import shutil

    from cluster.services.configuration import config_load

    conf = tmp_path / "demo"
    shutil.copytree(DEMO_CONF, conf)
    slurm_conf = conf / "slurm.conf"
    text = slurm_conf.read_text()
    assert "PriorityType=priority/multifactor" in text
    slurm_conf.write_text(text.replace("PriorityType=priority/multifactor", "PriorityType=priority/basic"))
    settings.CONF_DIR = conf
    return config_load(path=slurm_conf)


@pytest.fixture
def api(users):
    """api("alice") → a DRF client authenticated with a token of alice's (one per user)."""
    from rest_framework.test import APIClient

    from cluster.services.api_tokens import token_issue

    issued: dict[str, str] = {}

    def client(name: str | None) -> APIClient:
        c = APIClient()
        if name:
            if name not in issued:
                issued[name] = token_issue(users[name])[1]
            c.credentials(HTTP_AUTHORIZATION=f"Token {issued[name]}")
        return c

    return client


@pytest.fixture
def conf_dir(tmp_path):
    """A writable copy of the demo configuration (for reconfigure tests)."""
    import shutil

    target = tmp_path / "conf"
    shutil.copytree(DEMO_CONF, target)
    return target


@pytest.fixture
def private_data(conf_dir, settings):
    """private_data("jobs,nodes"): the demo configuration with slurm.conf's PrivateData set,
    loaded as a reconfigure would."""
    from cluster.services.configuration import config_load

    def load(words: str) -> None:
        settings.CONF_DIR = conf_dir
        path = conf_dir / "slurm.conf"
        path.write_text(path.read_text() + f"PrivateData={words}\n")
        config_load(path=path)

    return load
