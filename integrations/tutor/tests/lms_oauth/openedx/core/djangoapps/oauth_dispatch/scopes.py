"""
edx-platform's openedx/core/djangoapps/oauth_dispatch/scopes.py ``ApplicationModelScopes``: what an
application may request is its ApplicationAccess scopes and the default scopes, among the scopes
the LMS knows.
"""

from oauth2_provider.scopes import SettingsScopes

from .models import ApplicationAccess


class ApplicationModelScopes(SettingsScopes):
    def get_available_scopes(self, application=None, request=None, *args, **kwargs):
        try:
            granted = list(ApplicationAccess.get_scopes(application))
        except ApplicationAccess.DoesNotExist:
            granted = []
        return set(granted + self.get_default_scopes()).intersection(self.get_all_scopes())
