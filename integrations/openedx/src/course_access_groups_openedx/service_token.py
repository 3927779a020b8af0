"""
The plugin's calls to the service carry a short-lived JWT the LMS signs itself, as edx-platform
signs its asymmetric tokens: the payload of ``openedx/core/djangoapps/oauth_dispatch/jwt.py``
``_create_jwt`` for a client-credentials grant of the service user (scopes ``user_id`` and
``profile``), with ``roles`` ``["course_access_groups_service"]``, the role the service maps to its
``service`` role (access decisions, never the admin API), and ``administrator`` always false: the
service user needs no staff status, so a leaked token can ask decisions for five minutes and
change nothing. Signed as
``_encode_and_sign`` signs (PyJWT, ``PyJWK(JWT_AUTH['JWT_PRIVATE_SIGNING_JWK'],
JWT_AUTH['JWT_SIGNING_ALGORITHM'])``, a ``kid`` header only with ``JWT_AUTH_ADD_KID_HEADER``). The
service takes it through LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET, so no secret is
shared between the LMS and the service. One token per process, reused until ``TOKEN_RENEW_BEFORE``
seconds before it expires, or until the service refuses it (``forget``: the client signs a new one
and tries once more). The token appears in no message.
"""

import json
import threading
import time

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from jwt.api_jwk import PyJWK

from .conf import setting

# The role the service reads as its `service` role on a client-credentials token (src/http/lms-tokens.ts).
SERVICE_ROLE = "course_access_groups_service"


class TokenUnavailable(Exception):
    """No token can be signed: the LMS's key or the service user is missing (the message says which)."""


class SignedTokens:
    def __init__(self):
        self._lock = threading.Lock()
        self._token = None
        self._expires = 0

    def current(self):
        """A token valid for at least TOKEN_RENEW_BEFORE seconds more."""
        with self._lock:
            if self._token is None or time.time() >= self._expires - setting("TOKEN_RENEW_BEFORE"):
                self._token, self._expires = _sign(_payload())
            return self._token

    def forget(self, token):
        """The service refused `token`: the next current() signs a new one (unless another thread already did)."""
        with self._lock:
            if self._token == token:
                self._token = None


def _jwt_auth(name):
    value = (getattr(settings, "JWT_AUTH", None) or {}).get(name)
    if not value:
        raise TokenUnavailable(f"JWT_AUTH['{name}'] is not set")
    return value


def _payload():
    username = setting("SERVICE_USERNAME")
    try:
        user = get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        raise TokenUnavailable(f"COURSE_ACCESS_GROUPS['SERVICE_USERNAME']: no LMS user {username!r}") from None
    now = int(time.time())
    return {
        "aud": _jwt_auth("JWT_AUDIENCE"),
        "exp": now + setting("TOKEN_LIFETIME"),
        "grant_type": "client-credentials",
        "iat": now,
        "iss": _jwt_auth("JWT_ISSUER"),
        "preferred_username": user.username,
        "scopes": ["user_id", "profile"],
        "version": (getattr(settings, "JWT_AUTH", None) or {}).get("JWT_SUPPORTED_VERSION", "1.2.0"),
        "filters": [],
        "is_restricted": False,
        "email_verified": user.is_active,
        "user_id": user.id,
        "family_name": user.last_name,
        "given_name": user.first_name,
        # Never platform staff: the service role below is all the calls need.
        "administrator": False,
        "superuser": False,
        "roles": [SERVICE_ROLE],
    }


def _sign(payload):
    algorithm = (getattr(settings, "JWT_AUTH", None) or {}).get("JWT_SIGNING_ALGORITHM") or "RS512"
    try:
        key = PyJWK(json.loads(_jwt_auth("JWT_PRIVATE_SIGNING_JWK")), algorithm)
    except (ValueError, jwt.PyJWKError) as exc:
        raise TokenUnavailable(f"JWT_AUTH['JWT_PRIVATE_SIGNING_JWK'] is not a usable key ({type(exc).__name__})") from None
    headers = {"kid": key.key_id} if getattr(settings, "JWT_AUTH_ADD_KID_HEADER", False) else None
    return jwt.encode(payload, key.key, algorithm=algorithm, headers=headers), payload["exp"]
