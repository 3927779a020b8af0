"""
The LMS's own JWTs (docs/api.md, "the LMS's tokens"):

- the administrators' role: roles.py's function in SYSTEM_WIDE_ROLE_CLASSES, as plugin_settings()
  puts it there, called by the real edx-rbac ``create_role_auth_claim_for_user`` (what
  edx-platform's oauth_dispatch/jwt.py ``_create_jwt`` calls for ``roles``) over an LMS-shaped
  database (the CourseAccessRole stand-in, tests/standins/README.md);
- the plugin's calls to the real service with short-lived tokens the LMS signs itself
  (service_token.py), which the service takes through LMS_JWT_ISSUERS and
  LMS_JWT_PUBLIC_SIGNING_JWK_SET (test/integration/openedx-plugin.test.ts configures both halves).
"""

import json
import logging
import time

import jwt
import pytest
from django.contrib.auth.models import AnonymousUser, User
from edx_rbac.utils import create_role_auth_claim_for_user
from opaque_keys.edx.django.models import CourseKeyField

from common.djangoapps.student.models import CourseAccessRole
from course_access_groups_openedx import service_token
from course_access_groups_openedx.client import ServiceUnavailable, get_client
from course_access_groups_openedx.roles import ROLE_FUNCTION
from course_access_groups_openedx.settings import with_role_function

pytestmark = pytest.mark.django_db


@pytest.fixture
def role_classes(settings):
    """SYSTEM_WIDE_ROLE_CLASSES as an LMS with another role class has it after plugin_settings()."""
    settings.SYSTEM_WIDE_ROLE_CLASSES = with_role_function(getattr(settings, "SYSTEM_WIDE_ROLE_CLASSES", None))
    return settings.SYSTEM_WIDE_ROLE_CLASSES


def test_the_role_function_emits_an_admin_role_per_organization_from_org_level_course_access_roles(role_classes, settings):
    assert role_classes == [ROLE_FUNCTION]
    ada = User.objects.create(username="ada", email="ada@example.org")
    bo = User.objects.create(username="bo", email="bo@example.org")
    for org in ("BetaX", "AcmeX", "AcmeX"):
        CourseAccessRole.objects.create(user=ada, org=org, course_id=CourseKeyField.Empty, role="course_access_groups_admin")
    # Not sources: a course-level row with the role, another org-level role, another user's row.
    CourseAccessRole.objects.create(user=ada, org="GammaX", course_id="course-v1:GammaX+C+1", role="course_access_groups_admin")
    CourseAccessRole.objects.create(user=ada, org="DeltaX", course_id=CourseKeyField.Empty, role="staff")
    CourseAccessRole.objects.create(user=bo, org="EpsilonX", course_id=CourseKeyField.Empty, role="course_access_groups_admin")

    assert create_role_auth_claim_for_user(ada) == ["course_access_groups_admin:AcmeX", "course_access_groups_admin:BetaX"]
    assert create_role_auth_claim_for_user(bo) == ["course_access_groups_admin:EpsilonX"]
    assert create_role_auth_claim_for_user(User.objects.create(username="cy")) == []
    assert create_role_auth_claim_for_user(AnonymousUser()) == []
    # The LMS role is a setting: another name, another source.
    settings.COURSE_ACCESS_GROUPS = {**settings.COURSE_ACCESS_GROUPS, "ADMIN_ROLE": "staff"}
    assert create_role_auth_claim_for_user(ada) == ["course_access_groups_admin:DeltaX"]


def test_plugin_settings_add_the_role_function_once_after_the_lms_own():
    assert with_role_function(None) == [ROLE_FUNCTION]
    assert with_role_function(["enterprise.models.SystemWideEnterpriseUserRoleAssignment"]) == [
        "enterprise.models.SystemWideEnterpriseUserRoleAssignment",
        ROLE_FUNCTION,
    ]
    assert with_role_function([ROLE_FUNCTION]) == [ROLE_FUNCTION]


def test_ready_says_when_later_settings_dropped_the_role_function(settings, caplog):
    from course_access_groups_openedx import apps

    settings.SYSTEM_WIDE_ROLE_CLASSES = with_role_function([])
    apps.check_role_function()
    assert "SYSTEM_WIDE_ROLE_CLASSES" not in caplog.text
    settings.SYSTEM_WIDE_ROLE_CLASSES = ["enterprise.models.SystemWideEnterpriseUserRoleAssignment"]
    apps.check_role_function()
    assert f"SYSTEM_WIDE_ROLE_CLASSES lacks {ROLE_FUNCTION}" in caplog.text


@pytest.fixture
def signed_calls(service_settings):
    """The plugin as configured by default: no SERVICE_TOKEN, so it signs its own tokens."""
    service_settings(SERVICE_TOKEN="")
    return User.objects.create(username="course_access_groups_service", email="svc@example.org", is_staff=True)


def test_calls_carry_a_short_lived_token_the_lms_signs_and_the_service_takes(world, signed_calls, settings, monkeypatch):
    client = get_client()
    decision = client.decide(world["courses"]["linked"], "course.enroll", world["users"]["member"])
    assert (decision.allowed, decision.reason) == (True, "group")

    token = client._signed.current()
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert header["alg"] == "RS512" and "kid" not in header
    assert claims["exp"] - claims["iat"] == 300
    assert claims["iss"] == settings.JWT_AUTH["JWT_ISSUER"] and claims["aud"] == settings.JWT_AUTH["JWT_AUDIENCE"]
    assert (claims["user_id"], claims["administrator"], claims["grant_type"]) == (signed_calls.id, True, "client-credentials")
    # It verifies with the LMS's key, as every Open edX service verifies the LMS's tokens.
    private = jwt.PyJWK(json.loads(settings.JWT_AUTH["JWT_PRIVATE_SIGNING_JWK"]), "RS512")
    jwt.decode(token, private.key.public_key(), algorithms=["RS512"], audience=claims["aud"])

    # Reused while it has more than TOKEN_RENEW_BEFORE (60 s) left; a new one after.
    assert client._signed.current() == token
    later = time.time() + 241
    monkeypatch.setattr(service_token.time, "time", lambda: later)
    renewed = client._signed.current()
    assert renewed != token
    assert jwt.decode(renewed, options={"verify_signature": False})["iat"] == int(later)


def test_a_service_user_who_is_not_staff_is_refused_by_the_service_and_the_fail_mode_applies(world, signed_calls, caplog):
    User.objects.filter(pk=signed_calls.pk).update(is_staff=False)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ServiceUnavailable, match="HTTP 403"):
        get_client().decide(world["courses"]["linked"], "course.enroll", world["users"]["member"])


@pytest.mark.parametrize("missing, message", [
    ("user", r"SERVICE_USERNAME'\]: no LMS user 'course_access_groups_service'"),
    ("key", r"JWT_AUTH\['JWT_PRIVATE_SIGNING_JWK'\] is not set"),
], ids=["user", "key"])
def test_without_the_service_user_or_the_lms_key_no_call_is_made(world, service_settings, settings, missing, message):
    service_settings(SERVICE_TOKEN="")
    if missing == "key":
        User.objects.create(username="course_access_groups_service", is_staff=True)
        settings.JWT_AUTH = {**settings.JWT_AUTH, "JWT_PRIVATE_SIGNING_JWK": ""}
    with pytest.raises(ServiceUnavailable, match=message):
        get_client().decide(world["courses"]["linked"], "course.enroll", world["users"]["member"])
