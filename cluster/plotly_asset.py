"""plotly.js for the console's charts, served from the installed ``plotly`` package.

The package ships one dist only, the full ``plotly.min.js`` (4.8 MB): no partial or basic
bundle is in it, and building one needs plotly.js's own toolchain, which this project does
not run.  So the full dist is served the cheapest way it can be:

- one URL for every page (Resources, Power, the node page's load chart), carrying the
  plotly version, so a browser fetches it once and keeps it: ``immutable`` for a year, and
  a plotly upgrade changes the URL;
- compressed once per process at gzip level 9 (1.47 MB on the wire) rather than streamed
  through GZipMiddleware on every request (1.50 MB, per-chunk flushes);
- uncompressed to a client that does not accept gzip.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from functools import lru_cache
from pathlib import Path

import plotly
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.urls import path
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_safe

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
VERSION = plotly.__version__
YEAR = 365 * 24 * 3600


@lru_cache(maxsize=1)
def _bundle() -> tuple[bytes, bytes, str]:
    """(raw, gzipped, etag); mtime=0 keeps the gzip bytes, and so the ETag, the same in
    every process."""
    raw = PLOTLY_JS.read_bytes()
    return raw, gzip.compress(raw, compresslevel=9, mtime=0), f'"{hashlib.sha256(raw).hexdigest()[:32]}"'


def _accepts_gzip(request: HttpRequest) -> bool:
    # As GZipMiddleware decides it.
    return bool(re.search(r"\bgzip\b", request.headers.get("Accept-Encoding", "")))


@require_safe
def plotly_js(request: HttpRequest) -> HttpResponse:
    if not PLOTLY_JS.exists():  # pragma: no cover - plotly is in requirements.txt
        raise Http404("plotly.min.js is not installed")
    raw, packed, etag = _bundle()
    if request.headers.get("If-None-Match") == etag:
        response: HttpResponse = HttpResponseNotModified()
    elif _accepts_gzip(request):
        response = HttpResponse(packed, content_type="text/javascript")
        response["Content-Encoding"] = "gzip"
    else:
        response = HttpResponse(raw, content_type="text/javascript")
    response["ETag"] = etag
    response["Cache-Control"] = f"public, max-age={YEAR}, immutable"
    patch_vary_headers(response, ("Accept-Encoding",))
    return response


# Mounted by config/urls.py; templates name it {% url 'plotly-js' %}.
urlpattern = path(f"plotly/{VERSION}/plotly.min.js", plotly_js, name="plotly-js")
