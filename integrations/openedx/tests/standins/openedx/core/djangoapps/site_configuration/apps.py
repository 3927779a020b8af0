"""Test fixture only (tests/standins/README.md): edx-platform's site_configuration app."""

from django.apps import AppConfig


class SiteConfigurationConfig(AppConfig):
    name = "openedx.core.djangoapps.site_configuration"
    label = "site_configuration"
