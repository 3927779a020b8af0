"""
The plugin's pipeline steps run by the real openedx-filters (each filter's run_filter, configured
by OPEN_EDX_FILTERS_CONFIG as plugin_settings() leaves it) against the real service.
"""

import logging

import crum
import pytest
from django.test import RequestFactory
from openedx_filters.learning.filters import CourseAboutRenderStarted, CourseEnrollmentStarted, DashboardRenderStarted

from course_access_groups_openedx.client import get_client

from .conftest import course, course_key, enrollment, learner

# The steps read edx-platform's roles and invitations (tests/standins): a database, empty here.
pytestmark = pytest.mark.django_db

PLUGIN_LOGGER = "course_access_groups_openedx"


@pytest.fixture
def on_page():
    """Runs a filter as inside an LMS request by `user` (django-crum's current request and user)."""

    def run(user, call):
        request = RequestFactory().get("/courses/some-course/about")
        request.user = user
        crum.set_current_request(request)
        try:
            return call()
        finally:
            crum.set_current_request(None)

    return run


@pytest.fixture
def service_calls(monkeypatch):
    """Counts the HTTP requests the plugin's client makes."""
    pool = get_client()._pool
    calls = []
    urlopen = pool.urlopen

    def counting(method, url, *args, **kwargs):
        calls.append((method, url.split("?")[0]))
        return urlopen(method, url, *args, **kwargs)

    monkeypatch.setattr(pool, "urlopen", counting)
    return calls


def enroll(user, key):
    return CourseEnrollmentStarted.run_filter(user=user, course_key=course_key(key), mode="audit")


def about(user, key, on_page):
    context = {"course": course(key), "course_details": None}
    return on_page(user, lambda: CourseAboutRenderStarted.run_filter(context=context, template_name="courseware/course_about.html"))


def test_a_group_member_enrolls_in_a_linked_course_and_the_reason_is_logged_at_debug(world, member, caplog):
    caplog.set_level(logging.DEBUG, logger=PLUGIN_LOGGER)
    key = world["courses"]["linked"]
    assert enroll(member, key) == (member, course_key(key), "audit")
    assert f"course.enroll {key} for user {member.id}: allowed=True reason=group" in caplog.text


def test_an_outsider_is_refused_enrollment_in_a_private_course(world, outsider, caplog):
    caplog.set_level(logging.DEBUG, logger=PLUGIN_LOGGER)
    with pytest.raises(CourseEnrollmentStarted.PreventEnrollment) as refused:
        enroll(outsider, world["courses"]["linked"])
    assert str(refused.value) == "You cannot enroll in this course."
    assert "allowed=False reason=no_access" in caplog.text


def test_a_public_course_is_open_to_anyone_and_an_unknown_course_to_no_one(world, outsider):
    assert enroll(outsider, world["courses"]["public"])[1] == course_key(world["courses"]["public"])
    with pytest.raises(CourseEnrollmentStarted.PreventEnrollment):
        enroll(outsider, world["courses"]["unknown"])


def test_a_private_about_page_is_the_lms_404_for_outsiders_and_anonymous_visitors(world, outsider, anonymous, on_page):
    for user in (outsider, anonymous):
        with pytest.raises(CourseAboutRenderStarted.RenderCustomResponse) as hidden:
            about(user, world["courses"]["linked"], on_page)
        assert hidden.value.response.status_code == 404


def test_an_about_page_is_shown_to_a_member_and_a_public_one_to_anyone(world, member, anonymous, on_page):
    context, template = about(member, world["courses"]["linked"], on_page)
    assert (str(context["course"].id), template) == (world["courses"]["linked"], "courseware/course_about.html")
    context, _ = about(anonymous, world["courses"]["public"], on_page)
    assert str(context["course"].id) == world["courses"]["public"]


def test_a_hidden_about_page_redirects_when_a_redirect_is_configured(world, outsider, on_page, service_settings):
    service_settings(HIDDEN_ABOUT_PAGE_REDIRECT="/courses")
    with pytest.raises(CourseAboutRenderStarted.RedirectToPage) as redirected:
        about(outsider, world["courses"]["private"], on_page)
    assert redirected.value.redirect_to == "/courses"


def dashboard(user, keys, entitlements=()):
    """A learner dashboard's context as edx-platform builds it: entitlement cards first, then enrollments."""
    context = {
        "user": user,
        "course_entitlements": list(entitlements),
        "course_enrollments": [enrollment(k) for k in keys],
        "resume_button_urls": [""] * len(entitlements) + [f"/resume/{k}" for k in keys],
    }
    return DashboardRenderStarted.run_filter(context=context, template_name="dashboard.html")


def test_a_dashboard_keeps_what_one_batch_decision_allows(world, outsider, member, service_calls):
    c = world["courses"]
    keys = [c["linked"], c["private"], c["public"], c["unknown"]]

    context, template = dashboard(outsider, keys, entitlements=["an entitlement"])
    assert template == "dashboard.html"
    assert [str(e.course_id) for e in context["course_enrollments"]] == [c["public"]]
    # The resume buttons still pair with the cards that are left.
    assert context["resume_button_urls"] == ["", f"/resume/{c['public']}"]
    assert service_calls == [("POST", "/course_access_groups/api/v1/access/batch/")]

    context, _ = dashboard(member, keys)
    assert [str(e.course_id) for e in context["course_enrollments"]] == [c["linked"], c["public"]]
    assert len(service_calls) == 2


def test_enrollment_and_about_page_cost_one_call_each(world, member, on_page, service_calls):
    enroll(member, world["courses"]["linked"])
    about(member, world["courses"]["linked"], on_page)
    assert [path for _, path in service_calls] == ["/course_access_groups/api/v1/access/"] * 2


@pytest.mark.parametrize("port", ["closed_port", "silent_port"])
def test_with_the_service_unreachable_enrollment_and_about_pages_fail_closed_and_listings_open(
    world, member, on_page, service_settings, caplog, request, port
):
    service_settings(SERVICE_URL=f"http://127.0.0.1:{request.getfixturevalue(port)}", TIMEOUT=0.3)
    c = world["courses"]

    with pytest.raises(CourseEnrollmentStarted.PreventEnrollment) as refused:
        enroll(member, c["public"])
    assert str(refused.value) == "Enrollment is not available right now. Please try again later."
    with pytest.raises(CourseAboutRenderStarted.RenderCustomResponse):
        about(member, c["public"], on_page)
    context, _ = dashboard(member, [c["linked"], c["private"]])
    assert [str(e.course_id) for e in context["course_enrollments"]] == [c["linked"], c["private"]]

    warnings = [r.getMessage() for r in caplog.records if r.name.startswith(PLUGIN_LOGGER) and r.levelno == logging.WARNING]
    assert len(warnings) == 3
    assert all("gave no decision" in w for w in warnings)


def test_the_fail_mode_is_configurable_per_action(world, member, service_settings, closed_port):
    service_settings(SERVICE_URL=f"http://127.0.0.1:{closed_port}", ON_UNAVAILABLE={"course.enroll": "allow"})
    assert enroll(member, world["courses"]["private"])[1] == course_key(world["courses"]["private"])


def test_a_refused_token_is_the_service_unavailable_and_no_token_or_email_is_logged(world, caplog, service_settings):
    caplog.set_level(logging.DEBUG)
    token = "not-a-valid-token-0123456789"
    service_settings(SERVICE_TOKEN=token)
    someone = learner(world["users"]["member"], email="secret.address@example.org")
    with pytest.raises(CourseEnrollmentStarted.PreventEnrollment):
        enroll(someone, world["courses"]["public"])
    assert "HTTP 401" in caplog.text
    assert token not in caplog.text
    assert "secret.address" not in caplog.text
