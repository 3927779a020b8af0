"""
The LMS's settings as far as its OAuth2 applications go: django-oauth-toolkit with the scopes,
default scopes and scopes backend of edx-platform's lms/envs/common.py (OAUTH2_DEFAULT_SCOPES,
OAUTH2_PROVIDER), the application model DOT's own, and a SQLite database (LMS_OAUTH_DATABASE).
"""

import os

SECRET_KEY = "tests-only"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "oauth2_provider",
    "openedx.core.djangoapps.oauth_dispatch",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["LMS_OAUTH_DATABASE"]}}

OAUTH2_DEFAULT_SCOPES = {
    "read": "Read access",
    "write": "Write access",
    "email": "Know your email address",
    "profile": "Know your name and username",
}
OAUTH2_PROVIDER = {
    "SCOPES_BACKEND_CLASS": "openedx.core.djangoapps.oauth_dispatch.scopes.ApplicationModelScopes",
    "SCOPES": dict(OAUTH2_DEFAULT_SCOPES, **{
        "certificates:read": "Retrieve your course certificates",
        "grades:read": "Retrieve your grades for your enrolled courses",
        "tpa:read": "Retrieve your third-party authentication username mapping",
        "user_id": "Know your user identifier",
    }),
    "DEFAULT_SCOPES": OAUTH2_DEFAULT_SCOPES,
}
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
