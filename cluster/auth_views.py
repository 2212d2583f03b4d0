"""The console's login and logout, for every user (the admin keeps its own, staff-only).

Django's auth: the form checks the password through AUTHENTICATION_BACKENDS, so
django-axes counts failures here as on the API's token login, and a directory backend
(LDAP) answers here too; an OIDC provider adds its own button (docs/authentication.md).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views


class ConsoleLoginView(auth_views.LoginView):
    template_name = "console/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["oidc"] = "mozilla_django_oidc" in settings.INSTALLED_APPS
        return context


class ConsoleLogoutView(auth_views.LogoutView):
    """POST only (Django's LogoutView), back to the login page."""
