"""Every page a browser opens names fsched's icon, and /favicon.ico, which browsers ask of
pages that name none (the login form was one), is that icon: no 404 in the console."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static

pytestmark = pytest.mark.django_db


def test_favicon_ico_is_the_console_s_icon(client):
    answer = client.get("/favicon.ico")
    assert answer.status_code == 301 and answer["Location"] == static("favicon.svg")
    assert finders.find("favicon.svg")  # shipped with the project


def test_the_login_form_names_the_icon(client):
    page = client.get("/login/").content.decode()
    assert f'<link rel="icon" href="{static("favicon.svg")}" type="image/svg+xml">' in page
