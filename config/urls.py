from django.conf import settings
from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from cluster import plotly_asset
from cluster.auth_views import ConsoleLoginView, ConsoleLogoutView
from cluster.metrics_view import metrics_view
from hres.api import HresUpdate, LicenseList


def favicon(request):
    """Browsers ask /favicon.ico of pages that name no icon (the API's JSON, a raw file)."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    # Prometheus' scrape: a token or a network, not a login (cluster/metrics_view.py).
    path("metrics", metrics_view, name="metrics"),
    path("login/", ConsoleLoginView.as_view(), name="login"),
    path("logout/", ConsoleLogoutView.as_view(), name="logout"),
    # Both need a login (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]): the schema answers 401,
    # the docs page, which a browser opens, sends to the login form.
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", login_required(SpectacularSwaggerView.as_view(url_name="schema")), name="api-docs"),
    path("api/power/", include("power.api_urls")),
    path("api/limits/", include("limits.api")),
    path("api/reports/", include("reports.api")),
    # The extensions' routes under /api/, beside the core's.
    path("api/licenses/", LicenseList.as_view()),
    path("api/hres/", HresUpdate.as_view()),
    path("api/", include("steps.urls")),
    path("api/", include("cluster.api.urls")),
    # Slurm's REST path for HRES updates (Slurm's hres.html, "Runtime Updates"), token auth.
    path("slurm/v0.0.46/hres/", HresUpdate.as_view()),
    plotly_asset.urlpattern,
    path("hres/", include("hres.urls")),
    path("limits/", include("limits.urls")),
    path("power/", include("power.urls")),
    path("load/", include("load.urls")),
    path("reports/", include("reports.urls")),
    path("whatif/", include("whatif.urls")),
    path("help/", include("guides.urls")),
    path("", include("cluster.urls")),
]

if "mozilla_django_oidc" in settings.INSTALLED_APPS:  # FSCHED_AUTH_BACKENDS (docs/authentication.md)
    urlpatterns.insert(0, path("oidc/", include("mozilla_django_oidc.urls")))
