"""edx-platform's oauth_dispatch app (openedx/core/djangoapps/oauth_dispatch), label `oauth_dispatch`."""

from django.apps import AppConfig


class OAuthDispatchAppConfig(AppConfig):
    name = "openedx.core.djangoapps.oauth_dispatch"
    label = "oauth_dispatch"
