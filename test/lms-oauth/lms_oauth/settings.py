"""
Settings of the stand-in LMS OAuth2 provider: what the LMS sets for the same pieces
(lms/envs/common.py JWT_AUTH and OAUTH2_PROVIDER, Tutor's common_all.py for issuer and audience),
read from the environment serve.py prepares.
"""

import json
import os

SECRET_KEY = os.environ["LMS_STAND_IN_DJANGO_SECRET"]
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The LMS sends X-Frame-Options (why the console renews by a top-level redirect, never an iframe).
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
X_FRAME_OPTIONS = "DENY"
ROOT_URLCONF = "lms_oauth.urls"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["LMS_STAND_IN_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
LOGIN_URL = "/login"
LOGIN_REDIRECT_URL = "/"
# Test users only: a fast hasher keeps the stand-in's start-up and each sign-in short.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SESSION_COOKIE_NAME = "lms_sessionid"
CSRF_COOKIE_NAME = "lms_csrftoken"

# lms/envs/common.py OAUTH2_PROVIDER: these scopes; PKCE accepted, not required (DOT's default).
OAUTH2_PROVIDER = {
    "SCOPES": {
        "read": "Read access",
        "write": "Write access",
        "email": "Know your email address",
        "profile": "Know your name and username",
        "user_id": "Know your user identifier",
    },
    "DEFAULT_SCOPES": ["read", "write", "email", "profile"],
    "REQUEST_APPROVAL_PROMPT": "auto",
    "ACCESS_TOKEN_EXPIRE_SECONDS": 36000,
}

# oauth_dispatch/jwt.py _get_jwt_access_token_expire_seconds: 3600 in the LMS; shorter here when a test asks.
JWT_ACCESS_TOKEN_EXPIRE_SECONDS = int(os.environ.get("LMS_STAND_IN_JWT_EXPIRE_SECONDS", "3600"))
JWT_AUTH = {
    "JWT_ISSUER": os.environ["LMS_STAND_IN_ISSUER"],
    "JWT_AUDIENCE": "openedx",
    "JWT_SUPPORTED_VERSION": "1.2.0",
    "JWT_SIGNING_ALGORITHM": "RS512",
    "JWT_SECRET_KEY": SECRET_KEY,  # Tutor: OPENEDX_SECRET_KEY; HS256 tokens when asymmetric_jwt is not posted
    "JWT_PRIVATE_SIGNING_JWK": os.environ["LMS_STAND_IN_PRIVATE_JWK"],
}
# The LMS's LOGIN_REDIRECT_WHITELIST: hosts /logout may send the browser back to.
LOGIN_REDIRECT_WHITELIST = json.loads(os.environ.get("LMS_STAND_IN_REDIRECT_WHITELIST", "[]"))
# Where the LMS plugin's link points (the service's /course_access_groups/console/oauth/login).
CONSOLE_LOGIN_URL = os.environ.get("LMS_STAND_IN_CONSOLE_LOGIN_URL", "")
# A fresh database each run: its tables made straight from the models (syncdb), seconds faster
# than replaying every migration of auth and oauth2_provider.
MIGRATION_MODULES = {app: None for app in ("auth", "contenttypes", "sessions", "oauth2_provider")}
