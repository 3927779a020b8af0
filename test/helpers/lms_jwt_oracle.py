"""
The LMS's JWTs and their verdicts, for test/integration/lms-jwt.test.ts.

Mints tokens field for field as edx-platform mints them, and decides each one with the real
edx-drf-extensions decoder configured as Tutor configures the LMS: the oracle the service's
verdicts must equal. Run with the plugin's Python 3.11 environment (scripts/openedx-plugin.sh 3.11,
integrations/openedx/requirements/lms.txt: PyJWT, edx-drf-extensions, djangorestframework and
drf-jwt at edx-platform's pins). Prints one JSON object: the settings the service needs and, per
case, the token and the oracle's verdict ("ok", "invalid" or "restricted").

Upstream call paths reproduced:
- openedx/edx-platform openedx/core/djangoapps/oauth_dispatch/jwt.py: ``_create_jwt`` (the
  payload, ``_update_from_additional_handlers`` for the scopes user_id, email and profile, roles
  from edx-rbac ``create_role_auth_claim_for_user`` as ``role:context``) and ``_encode_and_sign``
  (PyJWT, ``PyJWK(JWT_PRIVATE_SIGNING_JWK, JWT_SIGNING_ALGORITHM)``, a ``kid`` header only with
  ``JWT_AUTH_ADD_KID_HEADER``).
- lms/envs/common.py ``JWT_AUTH`` defaults (RS512, ``JWT_SUPPORTED_VERSION`` 1.2.0, leeway 1 s,
  prefix ``JWT``) with tutor/templates/apps/openedx/settings/partials/common_all.py on top
  (issuer, audience ``openedx``, the key set with kid ``openedx``, ``JWT_ISSUERS`` whose
  SECRET_KEY is OPENEDX_SECRET_KEY).
- openedx/edx-drf-extensions edx_rest_framework_extensions/auth/jwt/decoder.py
  ``jwt_decode_handler`` and permissions.py ``NotJwtRestrictedApplication`` (what LMS JWT views
  add), called here as they are.
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import time
import types

import django
from django.conf import settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lms_jwt_mint as mint  # noqa: E402  (the minting shared with the stand-in LMS, test/lms-oauth)

ISSUER = "http://lms.cag.test/oauth2"
AUDIENCE = "openedx"
SECRET_KEY = "openedx-secret-key-of-the-lms"  # Tutor: OPENEDX_SECRET_KEY, the JWT_ISSUERS SECRET_KEY


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


NEW_PRIVATE, NEW_PUBLIC = mint.rsa_jwks("openedx")
OLD_PRIVATE, OLD_PUBLIC = mint.rsa_jwks("openedx-2025")
STRANGER_PRIVATE, _ = mint.rsa_jwks("stranger")
# A rotated set (generate_jwt_signing_key appends): the current key and the one before it.
PUBLIC_SET = json.dumps({"keys": [NEW_PUBLIC, OLD_PUBLIC]})

settings.configure(
    SECRET_KEY=SECRET_KEY,
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "rest_framework"],
    DATABASES={},
    JWT_AUTH={
        # lms/envs/common.py
        "JWT_VERIFY_EXPIRATION": True,
        "JWT_LEEWAY": 1,
        "JWT_DECODE_HANDLER": "edx_rest_framework_extensions.auth.jwt.decoder.jwt_decode_handler",
        "JWT_SUPPORTED_VERSION": "1.2.0",
        "JWT_ALGORITHM": "HS256",
        "JWT_SIGNING_ALGORITHM": "RS512",
        "JWT_AUTH_HEADER_PREFIX": "JWT",
        # Tutor's common_all.py
        "JWT_ISSUER": ISSUER,
        "JWT_AUDIENCE": AUDIENCE,
        "JWT_SECRET_KEY": SECRET_KEY,
        "JWT_PRIVATE_SIGNING_JWK": json.dumps(NEW_PRIVATE),
        "JWT_PUBLIC_SIGNING_JWK_SET": PUBLIC_SET,
        "JWT_ISSUERS": [{"ISSUER": ISSUER, "AUDIENCE": AUDIENCE, "SECRET_KEY": SECRET_KEY}],
    },
)
django.setup()

import jwt  # noqa: E402  (after settings: drf-jwt reads them on import)
from edx_rest_framework_extensions.auth.jwt.authentication import JwtAuthentication  # noqa: E402
from edx_rest_framework_extensions.auth.jwt.decoder import jwt_decode_handler  # noqa: E402
from edx_rest_framework_extensions.permissions import NotJwtRestrictedApplication  # noqa: E402
from jwt.api_jwk import PyJWK  # noqa: E402


def create_jwt_payload(user, **kwargs):
    """``_create_jwt`` (test/helpers/lms_jwt_mint.py) with this LMS's issuer and audience; the JWT cookie's scopes by default."""
    return mint.create_jwt_payload(user, ISSUER, AUDIENCE, **kwargs)


def encode_and_sign(payload, private_jwk=None, add_kid=False, algorithm="RS512"):
    """``_encode_and_sign`` with this LMS's current private key unless another is given."""
    return mint.encode_and_sign(payload, private_jwk or NEW_PRIVATE, add_kid=add_kid, algorithm=algorithm)


def hand_signed(header, payload, key_bytes=None):
    """Tokens PyJWT will not make (alg none, HMAC over a PEM public key): built by hand."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    if key_bytes is None:
        return signing_input + "."
    return signing_input + "." + b64(hmac.new(key_bytes, signing_input.encode(), hashlib.sha256).digest())


def verdict(token):
    """The LMS's answer: the decoder (JwtAuthentication's), then NotJwtRestrictedApplication."""
    try:
        jwt_decode_handler(token)
    except Exception:  # noqa: BLE001  (any failure is DRF's AuthenticationFailed, a 401)
        return "invalid"
    request = types.SimpleNamespace(auth=token, successful_authenticator=JwtAuthentication(), user=None)
    return "ok" if NotJwtRestrictedApplication().has_permission(request, None) else "restricted"


def public_pem():
    from cryptography.hazmat.primitives import serialization

    key = PyJWK(NEW_PUBLIC, "RS512").key
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


IS_RESTRICTED_VALUES = [
    ('"true"', "true"),
    ('"false" (a non-empty string)', "false"),
    ("1", 1),
    ("0.5", 0.5),
    ("[0] (a non-empty list)", [0]),
    ('{"a": 1} (a non-empty object)', {"a": 1}),
    ("false", False),
    ("0", 0),
    ("0.0", 0.0),
    ('"" (an empty string)', ""),
    ("[] (an empty list)", []),
    ("{} (an empty object)", {}),
    ("null", None),
]


def cases():
    admin = {"id": 7, "username": "ada", "email": "ada@example.org", "is_staff": False, "is_superuser": False}
    multi = {"id": 8, "username": "bo", "email": "bo@example.org", "is_staff": False, "is_superuser": False}
    staff = {"id": 9, "username": "discovery_worker", "email": "w@example.org", "is_staff": True, "is_superuser": True}
    org_a = ["course_access_groups_admin:org-a"]
    now = int(time.time())
    yield "valid, no kid (the default)", encode_and_sign(create_jwt_payload(admin, roles=org_a))
    yield "valid, kid (JWT_AUTH_ADD_KID_HEADER)", encode_and_sign(create_jwt_payload(admin, roles=org_a), add_kid=True)
    yield "valid, RS256", encode_and_sign(create_jwt_payload(admin, roles=org_a), algorithm="RS256")
    yield "valid, an unknown role beside the admin role", encode_and_sign(create_jwt_payload(admin, roles=["enterprise_admin:42", *org_a]))
    yield "valid, administrator of two organizations", encode_and_sign(create_jwt_payload(multi, roles=[*org_a, "course_access_groups_admin:org-b"]))
    yield "valid, a client-credentials token of a service user", encode_and_sign(
        create_jwt_payload(staff, scopes=("user_id", "profile"), grant_type="client-credentials")
    )
    yield "rotated set: the old key, no kid", encode_and_sign(create_jwt_payload(admin, roles=org_a), private_jwk=OLD_PRIVATE)
    yield "rotated set: the old key, its kid", encode_and_sign(create_jwt_payload(admin, roles=org_a), private_jwk=OLD_PRIVATE, add_kid=True)
    yield "a kid naming no key of the set, signed by one", encode_and_sign(
        create_jwt_payload(admin, roles=org_a), private_jwk={**NEW_PRIVATE, "kid": "unknown"}, add_kid=True
    )
    yield "a key not in the set", encode_and_sign(create_jwt_payload(admin, roles=org_a), private_jwk=STRANGER_PRIVATE)
    yield "a key not in the set, with a kid of the set", encode_and_sign(
        create_jwt_payload(admin, roles=org_a), private_jwk={**STRANGER_PRIVATE, "kid": "openedx"}, add_kid=True
    )
    yield "expired inside the leeway (exp is this second)", encode_and_sign(create_jwt_payload(admin, roles=org_a, exp=now, iat=now - 3600))
    yield "expired outside the leeway (30 s ago)", encode_and_sign(create_jwt_payload(admin, roles=org_a, exp=now - 30, iat=now - 3600))
    yield "issued a minute in the future", encode_and_sign(create_jwt_payload(admin, roles=org_a, iat=now + 60))
    yield "no exp", encode_and_sign(create_jwt_payload(admin, roles=org_a, exp=...))
    yield "no iat", encode_and_sign(create_jwt_payload(admin, roles=org_a, iat=...))
    yield "a wrong issuer", encode_and_sign(create_jwt_payload(admin, roles=org_a, iss="http://evil.test/oauth2"))
    yield "a wrong audience", encode_and_sign(create_jwt_payload(admin, roles=org_a, aud="another-service"))
    yield "no audience", encode_and_sign(create_jwt_payload(admin, roles=org_a, aud=...))
    yield "HS256 signed with the public key's PEM bytes", hand_signed(
        {"alg": "HS256", "typ": "JWT"}, create_jwt_payload(admin, roles=org_a), key_bytes=public_pem()
    )
    yield "alg none", hand_signed({"alg": "none", "typ": "JWT"}, create_jwt_payload(admin, roles=org_a))
    yield "restricted (is_restricted true)", encode_and_sign(create_jwt_payload(admin, roles=org_a, is_restricted=True))
    yield "version 2.0.0", encode_and_sign(create_jwt_payload(admin, roles=org_a, version="2.0.0"))
    yield "version 1.9.0 (a newer minor)", encode_and_sign(create_jwt_payload(admin, roles=org_a, version="1.9.0"))
    yield "no version (1.0.0 assumed)", encode_and_sign(create_jwt_payload(admin, roles=org_a, version=...))
    # decoder.py _set_token_defaults: only an absent version is defaulted; null reaches Version(None).
    yield "version null", encode_and_sign(create_jwt_payload(admin, roles=org_a, version=None))
    yield "version 1 (a number)", encode_and_sign(create_jwt_payload(admin, roles=org_a, version=1))
    # permissions.py JwtRestrictedApplication: `decode_jwt_is_restricted(...)` as a condition, so
    # Python's truthiness decides, whatever the claim's type.
    for label, value in IS_RESTRICTED_VALUES:
        yield f"is_restricted {label}", encode_and_sign(create_jwt_payload(admin, roles=org_a, is_restricted=value))
    # The LMS's own symmetric token: the LMS takes it (its JWT_ISSUERS SECRET_KEY); the service, never.
    yield "HS256 with the LMS's secret", jwt.encode(create_jwt_payload(admin, roles=org_a), SECRET_KEY, algorithm="HS256")


def main():
    out = {
        "issuers": json.dumps([{"ISSUER": ISSUER, "AUDIENCE": AUDIENCE}]),
        "publicKeySet": PUBLIC_SET,
        "privateJwk": json.dumps(NEW_PRIVATE),
        "cases": [{"name": name, "token": token, "verdict": verdict(token)} for name, token in cases()],
    }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
