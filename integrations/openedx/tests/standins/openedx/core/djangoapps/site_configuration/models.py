"""
Test fixture only (tests/standins/README.md): edx-platform's SiteConfiguration
(openedx/core/djangoapps/site_configuration/models.py): a site's values, read with ``get_value``.
"""

from django.contrib.sites.models import Site
from django.db import models


class SiteConfiguration(models.Model):
    site = models.OneToOneField(Site, related_name="configuration", on_delete=models.CASCADE)
    enabled = models.BooleanField(default=False)
    site_values = models.JSONField(null=False, blank=True, default=dict)

    def get_value(self, name, default=None):
        return self.site_values.get(name, default) if self.enabled else default
