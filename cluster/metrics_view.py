"""``GET /metrics``: for a Prometheus scraper that sends the token, or one in the networks.

Who may read it is configured, not logged in (a scraper has no session): a bearer token
(``FSCHED_METRICS_TOKEN``) or a client network (``FSCHED_METRICS_ALLOW``, loopback by
default).  Anything else is 403.  Behind a reverse proxy the client address is the
proxy's, so the token is the way in there (docs/metrics.md).
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from cluster import metrics


def _token_matches(request: HttpRequest) -> bool:
    token = settings.FSCHED_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


def _client_allowed(request: HttpRequest) -> bool:
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(net) for net in settings.FSCHED_METRICS_ALLOW)


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not (_token_matches(request) or _client_allowed(request)):
        return HttpResponse(
            "/metrics: send the bearer token of FSCHED_METRICS_TOKEN, or scrape from a network"
            " in FSCHED_METRICS_ALLOW\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(generate_latest(metrics.registry()), content_type=CONTENT_TYPE_LATEST)
