"""
The LMS's JWTs, minted field for field as edx-platform mints them: shared by the oracle
(test/helpers/lms_jwt_oracle.py) and the stand-in LMS OAuth2 provider (test/lms-oauth/), so both
sign exactly what the LMS signs. No Django here: callers pass the LMS's settings.

Upstream (openedx/edx-platform openedx/core/djangoapps/oauth_dispatch/jwt.py):
- ``_create_jwt``: the payload; ``_update_from_additional_handlers`` for the scopes user_id, email
  and profile (``_attach_*_claim``); ``roles`` from edx-rbac ``create_role_auth_claim_for_user``
  (``role:context``), only when not empty.
- ``_encode_and_sign``: PyJWT with ``PyJWK(JWT_PRIVATE_SIGNING_JWK, JWT_SIGNING_ALGORITHM)`` when
  asymmetric (a ``kid`` header only with ``JWT_AUTH_ADD_KID_HEADER``), else HS256 with
  ``JWT_SECRET_KEY``.
"""

import hashlib
import json
import time

import jwt
from jwt.api_jwk import PyJWK

JWT_SUPPORTED_VERSION = "1.2.0"  # lms/envs/common.py JWT_AUTH


def rsa_jwks(kid):
    """A private JWK and its public half, as generate_jwt_signing_key makes them (RSA, 2048 bits)."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = {**json.loads(RSAAlgorithm.to_jwk(key)), "kid": kid}
    public = {k: private[k] for k in ("kid", "kty", "e", "n")}
    return private, public


def create_jwt_payload(
    user,
    issuer,
    audience,
    scopes=("user_id", "email", "profile"),
    expires_in=3600,
    roles=(),
    is_restricted=False,
    filters=(),
    **override,
):
    """
    ``_create_jwt``: ``user`` is a dict (id, username, email, is_staff, is_superuser, is_active,
    and optionally name, first_name, last_name); ``override`` changes or (with ``...``) removes a claim.
    """
    now = int(time.time())
    payload = {
        "aud": audience,
        "exp": now + expires_in,
        "grant_type": override.pop("grant_type", ""),
        "iat": now,
        "iss": issuer,
        "preferred_username": user["username"],
        "scopes": list(scopes),
        "version": JWT_SUPPORTED_VERSION,
        "sub": hashlib.md5(user["username"].encode()).hexdigest(),  # anonymous_id_for_user: a hex digest
        "filters": list(filters),
        "is_restricted": is_restricted,
        "email_verified": user.get("is_active", True),
    }
    if "user_id" in scopes:
        payload["user_id"] = user["id"]
    if "email" in scopes:
        payload["email"] = user["email"]
    if "profile" in scopes:
        payload.update(
            name=user.get("name", user["username"].title()),
            family_name=user.get("last_name", ""),
            given_name=user.get("first_name", ""),
            administrator=user["is_staff"],
            superuser=user["is_superuser"],
        )
    if roles:
        payload["roles"] = list(roles)
    payload.update(override)
    return {k: v for k, v in payload.items() if v is not Ellipsis}


def encode_and_sign(payload, private_jwk, add_kid=False, algorithm="RS512"):
    """``_encode_and_sign`` with an asymmetric key: PyJWK, then jwt.encode, ``kid`` only with the toggle."""
    jwk = PyJWK(private_jwk, algorithm)
    headers = {"kid": jwk.key_id} if add_kid else None
    return jwt.encode(payload, jwk.key, algorithm=algorithm, headers=headers)


def encode_and_sign_symmetric(payload, secret_key):
    """``_encode_and_sign`` without ``use_asymmetric_key``: HS256 with JWT_SECRET_KEY (JWT_AUTH's JWT_ALGORITHM)."""
    return jwt.encode(payload, secret_key, algorithm="HS256")
