"""
openedx-filters pipeline steps that ask the service and apply its decision (README.md says
which filter enforces which action). Each page costs one call: a single decision for an
enrollment or an about page, one batch for a listing. When the service gives no decision, the
action's ON_UNAVAILABLE mode applies (enrollment and about pages refused, listings shown, by
default). Decisions and their reasons are logged at debug level; no token, no email.

Some users are let through without asking: platform staff and superusers, a course's staff and
instructors (edx-platform's CourseAccessRole), and, for an enrollment, a learner staff invited to
the course (edx-platform's CourseEnrollmentAllowed: the invitation is the grant, and honouring it
keeps the auto-enrollment inside account activation from ever failing). A CCX course is decided
as the course it is built on.
"""

import functools
import logging

from ccx_keys.locator import CCXLocator
from crum import get_current_request, get_current_user
from django.http import Http404, HttpResponseNotFound
from django.urls import get_resolver
from openedx_filters import PipelineStep
from openedx_filters.learning.filters import CourseAboutRenderStarted, CourseEnrollmentStarted

try:
    from openedx_filters.learning.filters import CourseEnrollmentViewStarted
except ImportError:  # openedx-filters before 3 (the LMS's pin today): the enrollment API view runs no filter of its own
    CourseEnrollmentViewStarted = None

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


# Course roles that see and enroll in their course whatever the service says (CourseAccessRole.role).
STAFF_ROLES = ("staff", "instructor")


def service_course_id(course_key):
    """The course the service knows: a CCX course is its master course (ccx-v1:... is never linked)."""
    if isinstance(course_key, CCXLocator):
        course_key = course_key.to_course_locator()
    return str(course_key)


@functools.lru_cache(maxsize=None)
def _lms_model(name):
    """
    One of edx-platform's student models, or None outside an LMS (the benchmark, a bare Django);
    looked up once, since a failed import is not remembered by Python and would search every call.
    """
    try:
        from common.djangoapps.student import models  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return getattr(models, name, None)


def _is_platform_staff(user):
    return bool(getattr(user, "is_authenticated", False) and (getattr(user, "is_staff", False) or getattr(user, "is_superuser", False)))


def _staff_courses(user, course_keys):
    """The keys among course_keys of which user is course staff or instructor (one query)."""
    roles = _lms_model("CourseAccessRole")
    if roles is None or not getattr(user, "is_authenticated", False) or not course_keys:
        return set()
    found = roles.objects.filter(user_id=user.id, role__in=STAFF_ROLES, course_id__in=list(course_keys)).values_list("course_id", flat=True)
    return {str(key) for key in found}


def _invited(user, course_key):
    """Staff invited this learner's email to the course (CourseEnrollmentAllowed, as edx-platform's for_user reads it)."""
    allowed = _lms_model("CourseEnrollmentAllowed")
    if allowed is None or not getattr(user, "email", None):
        return False
    return allowed.for_user(user).filter(course_id=course_key).exists()


def let_through(user, course_key, invitation_counts=False):
    """A reason to skip the service for this user and course, or None."""
    if _is_platform_staff(user):
        return "platform_staff"
    if str(course_key) in _staff_courses(user, [course_key]):
        return "course_staff"
    if invitation_counts and _invited(user, course_key):
        return "invited_by_staff"
    return None


def decide(action, course_key, user, invitation_counts=False):
    """One decision, the fail mode applied."""
    user_id = _user_id(user)
    reason = let_through(user, course_key, invitation_counts)
    if reason:
        return _logged(action, user_id, [Decision(str(course_key), True, reason)])[0]
    course_id = service_course_id(course_key)
    try:
        decisions = [get_client().decide(course_id, action, user_id)]
    except ServiceUnavailable as exc:
        decisions = _unavailable(action, [course_id], user_id, exc)
    return _logged(action, user_id, decisions)[0]


def decide_many(action, course_keys, user):
    """Decisions for a listing in one call (none for staff), the fail mode applied."""
    user_id = _user_id(user)
    if not course_keys:
        return []
    if _is_platform_staff(user):
        return _logged(action, user_id, [Decision(str(k), True, "platform_staff") for k in course_keys])
    staff_of = _staff_courses(user, course_keys)
    asked = [k for k in course_keys if str(k) not in staff_of]
    course_ids = [service_course_id(k) for k in asked]
    try:
        answers = get_client().decide_many(course_ids, action, user_id) if course_ids else []
    except ServiceUnavailable as exc:
        answers = _unavailable(action, course_ids, user_id, exc)
    by_key = {str(k): d for k, d in zip(asked, answers)}
    decisions = [by_key.get(str(k)) or Decision(str(k), True, "course_staff") for k in course_keys]
    return _logged(action, user_id, decisions)


class EnrollmentAccess(PipelineStep):
    """CourseEnrollmentStarted: every enrollment (self-service, API, staff-initiated) needs `course.enroll`."""

    def run_filter(self, user, course_key, mode, **kwargs):  # pylint: disable=arguments-differ
        decision = decide(ENROLL, course_key, user, invitation_counts=True)
        if not decision.allowed:
            message = (
                "Enrollment is not available right now. Please try again later."
                if decision.reason == "service_unavailable"
                else "You cannot enroll in this course."
            )
            raise CourseEnrollmentStarted.PreventEnrollment(message)
        return {"user": user, "course_key": course_key, "mode": mode}


class EnrollmentViewAccess(PipelineStep):
    """
    CourseEnrollmentViewStarted (the enrollment REST API view, EnrollmentListView.post): its
    reactivations by staff or an API key reach update_enrollment without CourseEnrollment.enroll.
    """

    def run_filter(self, user, course_key, requester_is_backend_service, **kwargs):  # pylint: disable=arguments-differ
        decision = decide(ENROLL, course_key, user, invitation_counts=True)
        if not decision.allowed:
            raise CourseEnrollmentViewStarted.PreventEnrollment(
                "Enrollment is not available right now. Please try again later."
                if decision.reason == "service_unavailable"
                else "This learner cannot enroll in this course."
            )
        return {"user": user, "course_key": course_key, "requester_is_backend_service": requester_is_backend_service}


def _not_found(message):
    """The LMS's own 404 page (its handler404), or a bare 404 outside a request."""
    request = get_current_request()
    if request is None:
        return HttpResponseNotFound()
    return get_resolver().resolve_error_handler(404)(request, Http404(message))


class AboutPageAccess(PipelineStep):
    """CourseAboutRenderStarted: the about page needs `course.see_about_page`; hidden as a 404 (or redirected)."""

    def run_filter(self, context, template_name, **kwargs):  # pylint: disable=arguments-differ
        course = context.get("course")
        if course is None:
            return {"context": context, "template_name": template_name}
        decision = decide(SEE_ABOUT_PAGE, course.id, get_current_user())
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

    def run_filter(self, context, template_name, **kwargs):  # pylint: disable=arguments-differ
        enrollments = list(context.get("course_enrollments") or [])
        if not enrollments:
            return {"context": context, "template_name": template_name}
        user = context.get("user") or get_current_user()
        decisions = decide_many(SEE_IN_CATALOG, [e.course_id for e in enrollments], user)
        kept = [e for e, d in zip(enrollments, decisions) if d.allowed]
        if len(kept) == len(enrollments):
            return {"context": context, "template_name": template_name}
        context = dict(context)
        context["course_enrollments"] = kept
        # The "you are enrolled in ..." banner edx-platform renders from the recent enrollments may
        # name a hidden course: it goes too.
        if context.get("enrollment_message"):
            context["enrollment_message"] = None
        # The template pairs course cards (entitlements, then enrollments) with resume_button_urls
        # by position: drop the URLs of the enrollments dropped.
        urls = context.get("resume_button_urls")
        if isinstance(urls, list):
            offset = len(context.get("course_entitlements") or [])
            if len(urls) == offset + len(enrollments):
                dropped = {offset + i for i, d in enumerate(decisions) if not d.allowed}
                context["resume_button_urls"] = [u for i, u in enumerate(urls) if i not in dropped]
        return {"context": context, "template_name": template_name}
