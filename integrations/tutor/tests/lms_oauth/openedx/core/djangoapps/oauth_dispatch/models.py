"""
edx-platform's openedx/core/djangoapps/oauth_dispatch/models.py, ``ApplicationAccess`` only: the
scopes an application may request beyond the defaults, one row per DOT application (a one-to-one
link named ``access``), stored as django-mysql's ``ListCharField`` (up to 25 scopes of 32
characters, comma-joined). The real model's ``filters`` column is left out: the command never
writes it.
"""

from django.db import models
from django_mysql.models import ListCharField
from oauth2_provider.settings import oauth2_settings


class ApplicationAccess(models.Model):
    application = models.OneToOneField(oauth2_settings.APPLICATION_MODEL, related_name="access", on_delete=models.CASCADE)
    scopes = ListCharField(base_field=models.CharField(max_length=32), size=25, max_length=25 * 33)

    class Meta:
        app_label = "oauth_dispatch"

    @classmethod
    def get_scopes(cls, application):
        return cls.objects.get(application=application).scopes
