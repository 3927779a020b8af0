"""
The admin console's link in the LMS (console.py): the page /course_access_groups/, added to the
LMS's URLs through edx-platform's plugin URL hook (the real edx-django-utils
get_plugin_url_patterns, with the plugin's entry point registered as pip registers it), shown over
the LMS-shaped database (the CourseAccessRole stand-in, tests/standins/README.md). The link is shown
to exactly the users whose LMS JWT the service takes in the console: ``administrator`` (is_staff) or
a ``course_access_groups_admin:<org>`` role, as the real edx-rbac puts roles.py's into the JWT.
"""

import re

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.test import RequestFactory
from django.urls import resolve, reverse
from edx_rbac.utils import create_role_auth_claim_for_user
from opaque_keys.edx.django.models import CourseKeyField

from common.djangoapps.student.models import CourseAccessRole
from course_access_groups_openedx.settings import with_role_function
from tests.test_plugin import registered  # noqa: F401  pylint: disable=unused-import

pytestmark = pytest.mark.django_db

PUBLIC_URL = "https://course-access-groups.lms.example.org"
LOGIN = PUBLIC_URL + "/course_access_groups/console/oauth/login"


@pytest.fixture
def lms(settings, registered):  # noqa: F811
    """The LMS's URLs with the plugin's, its settings with PUBLIC_URL and the role function (plugin_settings)."""
    from edx_django_utils.plugins.registry import DjangoAppRegistry

    DjangoAppRegistry.get_available_plugins.cache_clear()  # found again, with the entry point registered
    settings.ROOT_URLCONF = "tests.lms_urls"
    settings.COURSE_ACCESS_GROUPS = {**settings.COURSE_ACCESS_GROUPS, "PUBLIC_URL": PUBLIC_URL}
    settings.SYSTEM_WIDE_ROLE_CLASSES = with_role_function([])
    factory = RequestFactory()

    def visit(user, path="/course_access_groups/"):
        request = factory.get(path)
        request.user = user
        return resolve(path).func(request)

    return visit


def links(response):
    return re.findall(r'href="([^"]*)"', response.content.decode())


def org_role(user, org, role="course_access_groups_admin", course_id=CourseKeyField.Empty):
    CourseAccessRole.objects.create(user=user, org=org, course_id=course_id, role=role)


def test_the_page_is_the_plugins_url_in_the_lms(lms):
    assert reverse("course_access_groups:console") == "/course_access_groups/"
    assert resolve("/course_access_groups/").func.__module__ == "course_access_groups_openedx.console"


def test_staff_and_organization_administrators_see_the_link_to_the_consoles_sign_in_and_no_one_else(lms):
    staff = User.objects.create(username="staff", is_staff=True)
    admin = User.objects.create(username="admin")
    org_role(admin, "BetaX")
    org_role(admin, "AcmeX")
    # Not administrators for the service: another org-level role, the role on one course only, a
    # superuser without staff status (the JWT's administrator is is_staff), a learner, an inactive role of another user.
    course_staff = User.objects.create(username="course_staff")
    org_role(course_staff, "AcmeX", role="staff")
    org_role(course_staff, "AcmeX", course_id="course-v1:AcmeX+C+1")
    superuser = User.objects.create(username="superuser", is_superuser=True)
    learner = User.objects.create(username="learner")

    for user in (staff, admin):
        response = lms(user)
        assert response.status_code == 200
        assert links(response) == [LOGIN]
        assert "no-cache" in response["Cache-Control"]
    assert "every organization" in lms(staff).content.decode()
    assert "You administer <strong>AcmeX</strong>, <strong>BetaX</strong>." in lms(admin).content.decode()
    for user in (course_staff, superuser, learner):
        response = lms(user)
        assert response.status_code == 403
        assert links(response) == [] and "console/oauth" not in response.content.decode()
        assert "platform staff and the administrators of an organization" in response.content.decode()
    # Exactly the users whose LMS JWT the service takes: administrator, or a course_access_groups_admin role.
    for user in (staff, admin, course_staff, superuser, learner):
        accepted = user.is_staff or any(r.startswith("course_access_groups_admin:") for r in create_role_auth_claim_for_user(user))
        assert (lms(user).status_code == 200) is accepted, user.username


def test_a_visitor_who_is_not_signed_in_is_sent_to_the_lms_sign_in_first(lms, settings):
    response = lms(AnonymousUser())
    assert response.status_code == 302
    assert response["Location"] == f"{settings.LOGIN_URL}?next=/course_access_groups/"


def test_without_the_services_public_url_there_is_no_page_and_a_trailing_slash_is_not_doubled(lms, settings):
    staff = User.objects.create(username="staff", is_staff=True)
    settings.COURSE_ACCESS_GROUPS = {**settings.COURSE_ACCESS_GROUPS, "PUBLIC_URL": ""}
    from django.http import Http404

    with pytest.raises(Http404):
        lms(staff)
    settings.COURSE_ACCESS_GROUPS = {**settings.COURSE_ACCESS_GROUPS, "PUBLIC_URL": PUBLIC_URL + "/"}
    assert links(lms(staff)) == [LOGIN]


def test_the_page_escapes_what_it_shows(lms):
    admin = User.objects.create(username="admin")
    org_role(admin, "<script>x</script>")
    body = lms(admin).content.decode()
    assert "<script>" not in body and "&lt;script&gt;x&lt;/script&gt;" in body
