"""plotly.min.js is served once for every console page: one versioned URL, gzip-compressed,
immutable for a year (#15 point 7)."""

from __future__ import annotations

import gzip

import plotly
from django.urls import reverse

from cluster.plotly_asset import PLOTLY_JS


def test_one_versioned_url_for_every_page():
    assert reverse("plotly-js") == f"/plotly/{plotly.__version__}/plotly.min.js"


def test_gzipped_and_cached_for_a_year(client):
    answer = client.get(reverse("plotly-js"), HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    raw = PLOTLY_JS.read_bytes()
    assert answer.status_code == 200 and answer["Content-Encoding"] == "gzip"
    assert gzip.decompress(answer.content) == raw
    assert len(answer.content) < len(raw) // 3
    assert answer["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "Accept-Encoding" in answer["Vary"]
    again = client.get(reverse("plotly-js"), HTTP_IF_NONE_MATCH=answer["ETag"])
    assert again.status_code == 304 and not again.content


def test_plain_to_a_client_without_gzip(client):
    answer = client.get(reverse("plotly-js"))
    assert answer.status_code == 200 and "Content-Encoding" not in answer
    assert answer.content == PLOTLY_JS.read_bytes()


def test_read_only(client):
    assert client.post(reverse("plotly-js")).status_code == 405
