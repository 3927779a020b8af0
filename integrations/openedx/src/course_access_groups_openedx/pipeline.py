"""
openedx-filters pipeline steps that ask the service and apply its decision (README.md says
which filter enforces which action). Each page costs one call: a single decision for an
enrollment or an about page, one batch for a listing. When the service gives no decision, the
action's ON_UNAVAILABLE mode applies (enrollment and about pages refused, listings shown, by
default). Decisions and their reasons are logged at debug level; no token, no email.
"""

import logging

from crum import get_current_request, get_current_user
from django.http import Http404, HttpResponseNotFound
from django.urls import get_resolver
from openedx_filters import PipelineStep
from openedx_filters.learning.filters import CourseAboutRenderStarted, CourseEnrollmentStarted

from .client import Decision, ServiceUnavailable, get_client
from .conf import ENROLL, SEE_ABOUT_PAGE, SEE_IN_CATALOG, setting

log = logging.getLogger(__name__)


def _user_id(user):
    """The learner's id, or None for an anonymous visitor (the service then decides for "no user")."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return user.id


def _unavailable(action, course_ids, user_id, exc):
    allowed = setting("ON_UNAVAILABLE").get(action, "deny") == "allow"
    log.warning(
        "Course Access Groups service gave no decision (%s): %s %s for user %s, course(s) %s",
        exc, "allowing" if allowed else "refusing", action, user_id, ", ".join(course_ids),
    )
    return [Decision(course_id, allowed, "service_unavailable") for course_id in course_ids]


def _logged(action, user_id, decisions):
    for d in decisions:
        log.debug("Course Access Groups: %s %s for user %s: allowed=%s reason=%s", action, d.course_id, user_id, d.allowed, d.reason)
    return decisions


def decide(action, course_id, user):
    """One decision, the fail mode applied."""
    user_id = _user_id(user)
    try:
        decisions = [get_client().decide(course_id, action, user_id)]
    except ServiceUnavailable as exc:
        decisions = _unavailable(action, [course_id], user_id, exc)
    return _logged(action, user_id, decisions)[0]


def decide_many(action, course_ids, user):
    """Decisions for a listing in one call, the fail mode applied."""
    user_id = _user_id(user)
    if not course_ids:
        return []
    try:
        decisions = get_client().decide_many(course_ids, action, user_id)
    except ServiceUnavailable as exc:
        decisions = _unavailable(action, course_ids, user_id, exc)
    return _logged(action, user_id, decisions)


class EnrollmentAccess(PipelineStep):
    """CourseEnrollmentStarted: every enrollment (self-service, API, staff-initiated) needs `course.enroll`."""

    def run_filter(self, user, course_key, mode):  # pylint: disable=arguments-differ
        decision = decide(ENROLL, str(course_key), user)
        if not decision.allowed:
            message = (
                "Enrollment is not available right now. Please try again later."
                if decision.reason == "service_unavailable"
                else "You cannot enroll in this course."
            )
            raise CourseEnrollmentStarted.PreventEnrollment(message)
        return {"user": user, "course_key": course_key, "mode": mode}


def _not_found(message):
    """The LMS's own 404 page (its handler404), or a bare 404 outside a request."""
    request = get_current_request()
    if request is None:
        return HttpResponseNotFound()
    return get_resolver().resolve_error_handler(404)(request, Http404(message))


class AboutPageAccess(PipelineStep):
    """CourseAboutRenderStarted: the about page needs `course.see_about_page`; hidden as a 404 (or redirected)."""

    def run_filter(self, context, template_name):  # pylint: disable=arguments-differ
        course = context.get("course")
        if course is None:
            return {"context": context, "template_name": template_name}
        decision = decide(SEE_ABOUT_PAGE, str(course.id), get_current_user())
        if not decision.allowed:
            message = "This course's about page is hidden from this user."
            redirect_to = setting("HIDDEN_ABOUT_PAGE_REDIRECT")
            if redirect_to:
                raise CourseAboutRenderStarted.RedirectToPage(message, redirect_to=redirect_to)
            # A 404, as for a course that does not exist: a private course is not revealed.
            raise CourseAboutRenderStarted.RenderCustomResponse(message, response=_not_found(message))
        return {"context": context, "template_name": template_name}


class DashboardListing(PipelineStep):
    """
    DashboardRenderStarted: the learner's course list keeps the courses allowed by
    `course.see_in_catalog`, decided in one batch call.
    """

    def run_filter(self, context, template_name):  # pylint: disable=arguments-differ
        enrollments = list(context.get("course_enrollments") or [])
        if not enrollments:
            return {"context": context, "template_name": template_name}
        user = context.get("user") or get_current_user()
        decisions = decide_many(SEE_IN_CATALOG, [str(e.course_id) for e in enrollments], user)
        kept = [e for e, d in zip(enrollments, decisions) if d.allowed]
        if len(kept) == len(enrollments):
            return {"context": context, "template_name": template_name}
        context = dict(context)
        context["course_enrollments"] = kept
        # The template pairs course cards (entitlements, then enrollments) with resume_button_urls
        # by position: drop the URLs of the enrollments dropped.
        urls = context.get("resume_button_urls")
        if isinstance(urls, list):
            offset = len(context.get("course_entitlements") or [])
            if len(urls) == offset + len(enrollments):
                dropped = {offset + i for i, d in enumerate(decisions) if not d.allowed}
                context["resume_button_urls"] = [u for i, u in enumerate(urls) if i not in dropped]
        return {"context": context, "template_name": template_name}
