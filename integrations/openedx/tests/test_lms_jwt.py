"""
The LMS's own JWTs (docs/api.md, "the LMS's tokens"):

- the administrators' role: roles.py's function in SYSTEM_WIDE_ROLE_CLASSES, as plugin_settings()
  puts it there, called by the real edx-rbac ``create_role_auth_claim_for_user`` (what
  edx-platform's oauth_dispatch/jwt.py ``_create_jwt`` calls for ``roles``) over an LMS-shaped
  database (the CourseAccessRole stand-in, tests/standins/README.md);
- the plugin's calls to the real service with short-lived tokens the LMS signs itself
  (service_token.py), which the service takes through LMS_JWT_ISSUERS and
  LMS_JWT_PUBLIC_SIGNING_JWK_SET (test/integration/openedx-plugin.test.ts configures both halves):
  the service role only (decisions, never the admin API), a clock skew within the LMS's
  JWT_LEEWAY, one retry with a new token on 401;
- SERVICE_URL: https, or http only to a name inside the deployment.
"""

import json
import logging
import time

import jwt
import pytest
import urllib3
from django.contrib.auth.models import AnonymousUser, User
from edx_rbac.utils import create_role_auth_claim_for_user
from opaque_keys.edx.django.models import CourseKeyField

from common.djangoapps.student.models import CourseAccessRole
from course_access_groups_openedx import service_token
from course_access_groups_openedx.client import ServiceUnavailable, get_client, why_not_service_url
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
    # Not staff, not a superuser: the service role in the token is all the calls need.
    return User.objects.create(username="course_access_groups_service", email="svc@example.org")


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
    assert (claims["user_id"], claims["grant_type"]) == (signed_calls.id, "client-credentials")
    assert (claims["administrator"], claims["superuser"], claims["roles"]) == (False, False, ["course_access_groups_service"])
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


def test_a_token_with_only_the_service_role_gets_decisions_and_no_admin_call(world, signed_calls):
    client = get_client()
    batch = client.decide_many([world["courses"]["linked"], world["courses"]["private"]], "course.enroll", world["users"]["member"])
    assert [d.allowed for d in batch] == [True, False]
    # The same token, leaked, on the admin API of this organization and of any other: 403, nothing written.
    http = urllib3.PoolManager(headers={"Authorization": f"JWT {client._signed.current()}", "Content-Type": "application/json"})
    base = f"{world['service_url']}/course_access_groups/api/v1"
    for org in (world["organization"], "another-org"):
        for method, path, body in (
            ("POST", "course-access-groups/", json.dumps({"name": "Leaked", "description": ""})),
            ("GET", "course-access-groups/", None),
            ("PATCH", "site-configuration/", json.dumps({"enabled": False})),
        ):
            response = http.request(method, f"{base}/{path}?organization_uuid={org}", body=body, timeout=5.0)
            assert response.status == 403, (method, path, org, response.status)


@pytest.fixture
def requests_sent(monkeypatch):
    """Counts the requests the process's client sends."""
    client = get_client()
    sent = []
    request = client._pool.request

    def counted(*args, **kwargs):
        sent.append(args[:2])
        return request(*args, **kwargs)

    monkeypatch.setattr(client._pool, "request", counted)
    return sent


def test_a_refused_token_is_signed_again_and_the_call_made_once_more(world, signed_calls, requests_sent):
    client = get_client()
    # A token the service refuses (it expired) that the process still holds as valid (a key rotated, a clock jump).
    now = int(time.time())
    stale, _ = service_token._sign({**service_token._payload(), "iat": now - 400, "exp": now - 100})
    client._signed._token, client._signed._expires = stale, now + 3600
    decision = client.decide(world["courses"]["linked"], "course.enroll", world["users"]["member"])
    assert (decision.allowed, decision.reason) == (True, "group")
    assert len(requests_sent) == 2
    assert client._signed.current() != stale


@pytest.mark.parametrize("ahead, outcome", [(1, "decided"), (5, "refused")], ids=["1s", "5s"])
def test_a_service_clock_behind_the_lms_by_the_leeway_is_taken_further_is_refused_after_one_retry(
    world, signed_calls, requests_sent, monkeypatch, ahead, outcome
):
    # The LMS's clock `ahead` seconds before the service's: each token's iat is that far in the service's future.
    later = time.time() + ahead
    monkeypatch.setattr(service_token.time, "time", lambda: later)
    client = get_client()
    if outcome == "decided":
        assert client.decide(world["courses"]["linked"], "course.enroll", world["users"]["member"]).allowed is True
        assert len(requests_sent) == 1
    else:
        with pytest.raises(ServiceUnavailable, match="HTTP 401"):
            client.decide(world["courses"]["linked"], "course.enroll", world["users"]["member"])
        assert len(requests_sent) == 2


def test_a_configured_service_token_is_not_retried(world, service_settings):
    service_settings(SERVICE_TOKEN="not-a-token")
    client = get_client()
    counted = []
    request = client._pool.request
    client._pool.request = lambda *a, **k: counted.append(a[:2]) or request(*a, **k)
    with pytest.raises(ServiceUnavailable, match="HTTP 401"):
        client.decide(world["courses"]["linked"], "course.enroll", world["users"]["member"])
    assert len(counted) == 1


def test_service_url_is_https_unless_it_names_something_inside_the_deployment():
    urls = {
        "https://cag.example.org": True,
        "https://cag.example.org:8443/prefix": True,
        "http://course-access-groups-api:8000": True,  # Tutor local's (Docker Compose's) service name
        "http://course-access-groups-api.openedx.svc:8000": True,
        "http://course-access-groups-api.openedx.svc.cluster.local": True,
        "http://localhost:8000": True,
        "http://127.0.0.1:8000": True,
        "http://[::1]:8000": True,
        "http://cag.example.org": False,
        "http://10.0.0.5:8000": False,
        "http://cag.svc.example.org": False,
        "ftp://cag.example.org": False,
        "cag.example.org": False,
        "": False,
    }
    assert {url: why_not_service_url(url) is None for url in urls} == urls


def test_an_http_service_url_outside_the_deployment_is_never_called(world, service_settings):
    service_settings(SERVICE_URL="http://cag.example.org")
    with pytest.raises(ServiceUnavailable, match=r"SERVICE_URL'\] must be https: .* not cag.example.org"):
        get_client().decide(world["courses"]["linked"], "course.enroll", world["users"]["member"])


@pytest.mark.parametrize("missing, message", [
    ("user", r"SERVICE_USERNAME'\]: no LMS user 'course_access_groups_service'"),
    ("key", r"JWT_AUTH\['JWT_PRIVATE_SIGNING_JWK'\] is not set"),
], ids=["user", "key"])
def test_without_the_service_user_or_the_lms_key_no_call_is_made(world, service_settings, settings, missing, message):
    service_settings(SERVICE_TOKEN="")
    if missing == "key":
        User.objects.create(username="course_access_groups_service")
        settings.JWT_AUTH = {**settings.JWT_AUTH, "JWT_PRIVATE_SIGNING_JWK": ""}
    with pytest.raises(ServiceUnavailable, match=message):
        get_client().decide(world["courses"]["linked"], "course.enroll", world["users"]["member"])
